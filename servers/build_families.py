"""Build seeded tiny models of the model families people serve, each with its family's special tokens, BOS
convention, tokenizer settings and chat template (servers/templates/, sources in its README):

    .venv-server/bin/python servers/build_families.py --out models/families

Writes OUT/<family>/reward (<Arch>ForSequenceClassification, one label) and OUT/<family>/policy (<Arch>ForCausalLM)
for llama-3.1, llama-3.2, qwen2.5, qwen3, gemma-2, gemma-3 (its text model) and mistral-v0.3. The tokenizer is a
small byte-level BPE
(servers/build_models.py's, trained on CPython's own text) with the family's special tokens; the template and
whether plain text gets BOS are the family's. Seeded; a marker file skips the work when already built.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from build_models import build_once, train_bpe

BUILDER_VERSION = "3"
TEMPLATES = Path(__file__).resolve().parent / "templates"
# head_dim 32: vLLM's CPU attention kernel accepts only some head sizes
DIMENSIONS = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                  num_key_value_heads=1, head_dim=32)  # fmt: skip
SEEDS = {"policy": 11, "reward": 13}


@dataclass(frozen=True)
class Family:
    arch: str  # transformers' class prefix: <arch>ForCausalLM, <arch>ForSequenceClassification
    template: str  # servers/templates/<template>.jinja
    bos: str | None  # None: the family has no BOS
    eos: str
    pad: str | None
    special: list[str]  # every special token, in vocabulary order
    unk: str | None = None
    config: dict[str, Any] = field(default_factory=dict)  # family-specific model config
    classes: dict[str, str] = field(default_factory=dict)  # "config", "policy", "reward": other class names


LLAMA3 = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
          "<|eom_id|>", "<|python_tag|>", "<|finetune_right_pad_id|>"]  # fmt: skip
QWEN = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]
FAMILIES = {
    "llama-3.1": Family("Llama", "llama-3.1", "<|begin_of_text|>", "<|eot_id|>", None, LLAMA3),
    "llama-3.2": Family("Llama", "llama-3.2", "<|begin_of_text|>", "<|eot_id|>", None, LLAMA3),
    "qwen2.5": Family("Qwen2", "qwen2.5", None, "<|im_end|>", "<|endoftext|>", QWEN),
    "qwen3": Family("Qwen3", "qwen3", None, "<|im_end|>", "<|endoftext|>", [*QWEN, "<think>", "</think>"]),
    # Gemma-2: vLLM ties its embeddings (an untied lm_head does not load), as the published models do. Attention
    # logit softcapping is off: with it, vLLM CPU's attention gave rewards 1.4e-4 from transformers' on these
    # random weights (4.8e-7 without); the final-logit softcapping stays on.
    "gemma-2": Family("Gemma2", "gemma-2", "<bos>", "<eos>", "<pad>",
                      ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"], unk="<unk>",
                      config={"query_pre_attn_scalar": 32, "sliding_window": 4096, "tie_word_embeddings": True,
                              "attn_logit_softcapping": None}),
    # Gemma-3's text model; vLLM CPU 0.32.0 serves Gemma3ForCausalLM but cannot load a
    # Gemma3TextForSequenceClassification checkpoint ("no module or parameter named 'model'")
    "gemma-3": Family("Gemma3", "gemma-3", "<bos>", "<eos>", "<pad>",
                      ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>"],
                      unk="<unk>", config={"query_pre_attn_scalar": 32, "sliding_window": 512,
                                           "tie_word_embeddings": True},
                      classes={"config": "Gemma3TextConfig", "reward": "Gemma3TextForSequenceClassification"}),
    "mistral-v0.3": Family("Mistral", "mistral-v0.3", "<s>", "</s>", None,
                           ["<unk>", "<s>", "</s>", "[INST]", "[/INST]"], unk="<unk>"),
}  # fmt: skip


def tokenizer_for(family: Family) -> Any:
    """The family's tokenizer: BOS added to plain text where the family adds it (as its tokenizer does)."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    tok = train_bpe(family.special)
    if family.bos is not None:
        bos_id = tok.token_to_id(family.bos)
        tok.post_processor = processors.TemplateProcessing(
            single=f"{family.bos} $A", pair=f"{family.bos} $A {family.bos} $B", special_tokens=[(family.bos, bos_id)]
        )
    named = {"bos_token": family.bos, "eos_token": family.eos, "pad_token": family.pad, "unk_token": family.unk}
    return PreTrainedTokenizerFast(tokenizer_object=tok, **{k: v for k, v in named.items() if v is not None})


def save_tokenizer(family: Family, tok: Any, out: Path) -> None:
    """tokenizer.json and a tokenizer_config.json as the family's own: the template inline, `add_bos_token`."""
    tok.backend_tokenizer.save(str(out / "tokenizer.json"))
    added = {
        str(tok.convert_tokens_to_ids(t)): {"content": t, "lstrip": False, "normalized": False,
                                            "rstrip": False, "single_word": False, "special": True}
        for t in family.special
    }  # fmt: skip
    config = {
        "added_tokens_decoder": added,
        "add_bos_token": family.bos is not None,
        "add_eos_token": False,
        "bos_token": family.bos,
        "eos_token": family.eos,
        "pad_token": family.pad,
        "unk_token": family.unk,
        "chat_template": (TEMPLATES / f"{family.template}.jinja").read_text(encoding="utf-8"),
        "clean_up_tokenization_spaces": False,
        "model_max_length": 4096,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def build_family(name: str, out: Path) -> None:
    import torch
    import transformers

    family = FAMILIES[name]
    tok = tokenizer_for(family)
    named = {"bos": family.bos, "eos": family.eos, "pad": family.pad}
    ids = {f"{k}_token_id": tok.convert_tokens_to_ids(v) for k, v in named.items() if v is not None}
    config_cls = getattr(transformers, family.classes.get("config", f"{family.arch}Config"))
    heads: dict[str, tuple[str, dict[str, Any]]] = {
        "policy": ("ForCausalLM", {}),
        "reward": ("ForSequenceClassification", {"num_labels": 1}),
    }
    for role, (suffix, extra) in heads.items():
        torch.manual_seed(SEEDS[role])
        config = config_cls(
            vocab_size=len(tok), max_position_embeddings=4096, initializer_range=0.1, dtype="float32", **DIMENSIONS,
            **({"tie_word_embeddings": False} | family.config), **ids, **extra,
        )  # fmt: skip
        model_cls = getattr(transformers, family.classes.get(role, f"{family.arch}{suffix}"))
        model = model_cls(config).to(torch.float32).eval()
        target = out / name / role
        target.mkdir(parents=True)
        model.save_pretrained(target, safe_serialization=True)
        save_tokenizer(family, tok, target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--force", action="store_true", help="rebuild even if the marker says it is built")
    args = parser.parse_args(argv)
    out: Path = args.out
    templates = {p.name: p.read_text(encoding="utf-8") for p in sorted(TEMPLATES.glob("*.jinja"))}
    # everything the models are built from: a changed family, size or template is rebuilt
    families = {name: asdict(family) for name, family in FAMILIES.items()}
    wanted = {"builder_version": BUILDER_VERSION, "families": families, "dimensions": DIMENSIONS}
    wanted["templates"] = templates

    def build_all(partial: Path) -> None:
        for name in FAMILIES:
            build_family(name, partial)

    sha256 = build_once(out, wanted, args.force, build_all)
    if sha256 is None:
        print(f"{out}: already built (builder {BUILDER_VERSION}); --force rebuilds")
    else:
        print(f"{out}: built {len(FAMILIES)} families (policy, reward), sha256 {sha256[:16]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
