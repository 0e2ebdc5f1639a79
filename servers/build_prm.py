"""Build a seeded tiny process reward model (`Qwen2ForProcessRewardModel`, as Qwen2.5-Math-PRM) locally:

    .venv-server/bin/python servers/build_prm.py --out models/tiny-prm

transformers has no class for this architecture (the published models ship their own modeling file); vLLM has
one (`model_executor/models/qwen2_rm.py`): a `Qwen2Model` under `model.` and a two-layer head `score` (Linear
hidden->hidden with bias, ReLU, Linear hidden->2 with bias) whose two outputs, softmaxed, give each step tag's
probability of being wrong (0) and right (1). The weights are a seeded `Qwen2Model` and a seeded head, written
with safetensors; the tokenizer is the tiny Qwen2.5 family's (servers/build_families.py, the Qwen2.5 chat template)
with the step tag `<extra_0>` as a special token inside the small vocabulary (its id is in `prm.json`).
A rebuild gives byte-identical files; a marker skips the work when the same builder version already built OUT.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from build_families import DIMENSIONS, FAMILIES, TEMPLATES, save_tokenizer, tokenizer_for
from build_models import build_once

BUILDER_VERSION = "1"
STEP_TAG = "<extra_0>"  # Qwen2.5-Math-PRM's step separator
FAMILY = replace(FAMILIES["qwen2.5"], special=[*FAMILIES["qwen2.5"].special, STEP_TAG])
SEED = 17
# Wider than transformers' 0.02, so that step probabilities spread over (0, 1) instead of sitting at 0.5
INIT_STD = 0.3
INFO_FILE = "prm.json"  # the step tag and its id, for the configs and the tests


def build(out: Path) -> None:
    import torch
    from safetensors.torch import save_file
    from transformers import Qwen2Config, Qwen2Model

    torch.use_deterministic_algorithms(True)
    tok = tokenizer_for(FAMILY)
    step_tag_id = tok.convert_tokens_to_ids(STEP_TAG)
    config = Qwen2Config(
        vocab_size=len(tok), max_position_embeddings=4096, initializer_range=0.1, dtype="float32",
        tie_word_embeddings=False, eos_token_id=tok.convert_tokens_to_ids(FAMILY.eos),
        pad_token_id=tok.convert_tokens_to_ids(FAMILY.pad), num_labels=2,
        architectures=["Qwen2ForProcessRewardModel"], **DIMENSIONS,
    )  # fmt: skip
    torch.manual_seed(SEED)
    body = Qwen2Model(config).to(torch.float32).eval()
    hidden = config.hidden_size
    head = torch.nn.Sequential(torch.nn.Linear(hidden, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 2))
    for layer in (head[0], head[2]):
        torch.nn.init.normal_(layer.weight, std=INIT_STD)
        torch.nn.init.normal_(layer.bias, std=INIT_STD)
    tensors = {f"model.{k}": v for k, v in body.state_dict().items()}
    tensors |= {f"score.{k}": v for k, v in head.state_dict().items()}
    out.mkdir(parents=True)
    save_file({k: v.contiguous() for k, v in sorted(tensors.items())}, str(out / "model.safetensors"),
              metadata={"format": "pt"})  # fmt: skip
    config.save_pretrained(out)
    save_tokenizer(FAMILY, tok, out)
    info = {"step_tag": STEP_TAG, "step_tag_id": step_tag_id, "num_labels": 2}
    (out / INFO_FILE).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")


def step_tag_id(model_dir: Path) -> int:
    """The step tag's id in a model this script built."""
    return int(json.loads((model_dir / INFO_FILE).read_text(encoding="utf-8"))["step_tag_id"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--force", action="store_true", help="rebuild even if the marker says it is built")
    args = parser.parse_args(argv)
    template = (TEMPLATES / f"{FAMILY.template}.jinja").read_text(encoding="utf-8")
    wanted: dict[str, Any] = {"builder_version": BUILDER_VERSION, "family": asdict(FAMILY),
                              "dimensions": DIMENSIONS, "template": template, "seed": SEED}  # fmt: skip
    sha256 = build_once(args.out, wanted, args.force, build)
    if sha256 is None:
        print(f"{args.out}: already built (builder {BUILDER_VERSION}); --force rebuilds")
    else:
        print(f"{args.out}: built the tiny PRM (step tag id {step_tag_id(args.out)}), sha256 {sha256[:16]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
