"""Build small Llama models locally (no hub access is needed): a policy, a reference and a reward model.

    .venv-server/bin/python servers/build_models.py --size tiny --out models/tiny

Writes OUT/policy, OUT/reference (LlamaForCausalLM, two seeds) and OUT/reward (LlamaForSequenceClassification,
one label), each a complete Hugging Face model directory with the same byte-level BPE tokenizer, trained on
CPython's own `pydoc_data/topics.py` so that every machine has the text. Everything is seeded: a rebuild gives
byte-identical files. A marker file skips the work when the same builder version already built OUT.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch and transformers take seconds to import; the "already built" path must not wait
    from tokenizers import Tokenizer
    from transformers import LlamaConfig, PreTrainedTokenizerFast

# Training threads can change the order merges are found in; one thread keeps rebuilds byte-identical.
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

BUILDER_VERSION = "1"  # bump whenever the output changes, so existing builds are redone
MARKER = ".built.json"
VOCAB_SIZE = 2048
BOS, EOS, PAD = "<s>", "</s>", "<pad>"
ROLE_TOKENS = ["<|system|>", "<|user|>", "<|assistant|>"]
SEEDS = {"policy": 1, "reference": 2, "reward": 3, "tokenizer": 0}

# BOS first (vLLM's chat path tokenizes with add_special_tokens=False, so the template must hold it), then one
# block per turn, closed by EOS. The generation prompt ends with the assistant marker and a newline, so the
# response tokens are what follows tokenize(prompt, add_generation_prompt=True) in the full conversation.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] not in ['system', 'user', 'assistant'] %}"
    "{{ raise_exception('unknown role ' + message['role']) }}"
    "{% endif %}"
    "{{ '<|' + message['role'] + '|>\\n' + message['content'] + eos_token }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"
)

SIZES = {
    # head_dim 32 / 64: vLLM's CPU attention kernel accepts only some head sizes (32, 64, 80, 96, 112, 128, ...).
    "tiny": dict(hidden_size=128, intermediate_size=344, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2),
    # `make bench`: compute-bound on the server (about 0.1 s of compute per request of six sequences), yet small
    # enough for several passes over all 4,788 RM-Bench sequences in an hour on 2 cores
    "bench": dict(hidden_size=256, intermediate_size=688, num_hidden_layers=2, num_attention_heads=8,
                  num_key_value_heads=4),
    "large": dict(hidden_size=512, intermediate_size=1376, num_hidden_layers=8, num_attention_heads=8,
                  num_key_value_heads=4),
}  # fmt: skip


def train_bpe(special: list[str]) -> Tokenizer:
    """A byte-level BPE of VOCAB_SIZE tokens with `special` first, trained on CPython's `pydoc_data/topics.py`."""
    import pydoc_data.topics

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    text = Path(pydoc_data.topics.__file__).read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line.strip()]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(lines, trainer=trainer)
    return tok


def train_tokenizer() -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer that adds BOS to plain text, as Llama's does."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    tok = train_bpe([BOS, EOS, PAD, *ROLE_TOKENS])
    bos_id = tok.token_to_id(BOS)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, bos_id)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        additional_special_tokens=ROLE_TOKENS,
        chat_template=CHAT_TEMPLATE,
        model_max_length=4096,
        clean_up_tokenization_spaces=False,
    )


def save_tokenizer(tok: PreTrainedTokenizerFast, out: Path) -> None:
    """tokenizer.json plus a tokenizer_config.json that transformers 4 and 5 both read.

    transformers 5 would write `tokenizer_class: TokenizersBackend` and a separate chat_template.jinja,
    which transformers 4 cannot load, so the config is written by hand with the template inline.
    """
    tok.backend_tokenizer.save(str(out / "tokenizer.json"))
    added = {
        str(tok.convert_tokens_to_ids(t)): {"content": t, "lstrip": False, "normalized": False,
                                            "rstrip": False, "single_word": False, "special": True}
        for t in [BOS, EOS, PAD, *ROLE_TOKENS]
    }  # fmt: skip
    config = {
        "added_tokens_decoder": added,
        "additional_special_tokens": ROLE_TOKENS,
        "add_bos_token": True,
        "add_eos_token": False,
        "bos_token": BOS,
        "eos_token": EOS,
        "pad_token": PAD,
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 4096,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    special = {"bos_token": BOS, "eos_token": EOS, "pad_token": PAD, "additional_special_tokens": ROLE_TOKENS}
    (out / "special_tokens_map.json").write_text(json.dumps(special, indent=2) + "\n", encoding="utf-8")


def llama_config(size: str, tok: PreTrainedTokenizerFast, **extra: Any) -> LlamaConfig:
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(tok),
        max_position_embeddings=4096,
        rope_theta=10000.0,
        # Wider than Llama's 0.02 so that log-probs and rewards spread out (a reward std near 1, some negative:
        # a sigmoid-squashed score is then easy to tell from a raw logit).
        initializer_range=0.1,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=False,
        dtype="float32",
        **SIZES[size],
        **extra,
    )


def build(size: str, out: Path) -> None:
    import torch
    from transformers import LlamaForCausalLM, LlamaForSequenceClassification

    torch.use_deterministic_algorithms(True)
    torch.manual_seed(SEEDS["tokenizer"])
    tok = train_tokenizer()
    for name, cls, extra in (
        ("policy", LlamaForCausalLM, {}),
        ("reference", LlamaForCausalLM, {}),
        ("reward", LlamaForSequenceClassification, {"num_labels": 1}),
    ):
        torch.manual_seed(SEEDS[name])
        model = cls(llama_config(size, tok, **extra)).to(torch.float32).eval()
        target = out / name
        target.mkdir(parents=True)
        model.save_pretrained(target, safe_serialization=True)
        save_tokenizer(tok, target)


def digest(out: Path) -> str:
    """sha256 over every file's path and bytes (the marker records it; tests compare rebuilds with it)."""
    h = hashlib.sha256()
    for path in sorted(p for p in out.rglob("*") if p.is_file() and p.name != MARKER):
        h.update(str(path.relative_to(out)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def build_once(out: Path, wanted: dict[str, Any], force: bool, build_into: Callable[[Path], None]) -> str | None:
    """Build into `out` unless its marker already records `wanted` (None then); else the build's sha256. The
    build goes next to the target and is swapped in, so an interrupted build never leaves a half-written model."""
    marker = out / MARKER
    if not force and marker.is_file():
        found = json.loads(marker.read_text(encoding="utf-8"))
        if {k: found.get(k) for k in wanted} == wanted:
            return None
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    build_into(partial)
    sha256 = digest(partial)
    (partial / MARKER).write_text(json.dumps({**wanted, "sha256": sha256}, indent=2) + "\n", encoding="utf-8")
    for path in partial.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)  # safetensors writes 0600; servers may run as another user
    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)
    return sha256


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="tiny")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--force", action="store_true", help="rebuild even if the marker says it is built")
    args = parser.parse_args(argv)
    out: Path = args.out
    # the dimensions too: a size whose dimensions changed is rebuilt
    wanted = {"builder_version": BUILDER_VERSION, "size": args.size, "dimensions": SIZES[args.size]}
    sha256 = build_once(out, wanted, args.force, lambda partial: build(args.size, partial))
    if sha256 is None:
        print(f"{out}: already built ({args.size}, builder {BUILDER_VERSION}); --force rebuilds")
    else:
        print(f"{out}: built {args.size} models (policy, reference, reward), sha256 {sha256[:16]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
