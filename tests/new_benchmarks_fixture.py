"""Test data of RewardMATH, M-RewardBench and IF-RewardBench, built in each one's exact layout (nothing is
downloaded, nothing copied from the benchmarks' repositories):

- RewardMATH: `dataset/benchmark/RewardMATH_direct.json` of kimsh0507/RewardMATH_official (cde06ab): a JSON list,
  one record per solution: problem, answer, eval_solution (a list of steps), solution_reference, solution_type
  (chosen / rejected), subject, level (int), problem_id, id (ints); one chosen solution (by human_to_GPT-4) and
  nine rejected ones per problem, in that order.
- M-RewardBench: the hub dataset CohereLabsCommunity/multilingual-reward-bench, one config per language stored as
  `<language>/test-00000-of-00001.parquet`: id (int64), language, prompt, chosen, rejected, chosen_model,
  rejected_model, source, category (strings).
- IF-RewardBench: `data/if_rewardbench.json` of thu-coai/IF-RewardBench (c192fe9): a JSON list of id (int),
  response_generation_model, instruction_type (Single_Turn / Multi_Turn / System_Prompt), messages ({role,
  content}), checklist (strings), constraint_type ({item, constraint_categories, constraint_composition_types}),
  responses ({response_id, response, labels: one 0/1 per checklist item}) and preference_graph ({chosen:
  {response_id}, rejected: {response_id}}). The file itself could not be read here: these fields are those its
  README lists and its scripts read.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
from hub_schemas import write_parquet

MATH_SUBJECTS = ("Algebra", "Counting & Probability", "Geometry", "Intermediate Algebra", "Number Theory",
                 "Prealgebra", "Precalculus")  # fmt: skip
WRITERS = ("modified_with_GPT-4", "gpt-3.5-turbo-0125", "mistralai/Mixtral-8x7B-Instruct-v0.1",
           "google/gemma-2-27b-it", "microsoft/Phi-3-medium-4k-instruct", "meta-llama/Meta-Llama-3-8B-Instruct",
           "google/gemma-7b-it", "WizardLMTeam/WizardMath-7B-V1.1", "peiyi9979/mistral-7b-sft")  # fmt: skip


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(("so", "x", "=", "then", "we", "get", "$2$", "sum", "is", "and")) for _ in range(n))


def rewardmath_records(problems: int = 14, seed: int = 0) -> list[dict[str, Any]]:
    """RewardMATH's records for `problems` problems, subjects in turn, steps of random lengths."""
    rng = random.Random(seed)
    out = []
    for p in range(problems):
        subject = MATH_SUBJECTS[p % len(MATH_SUBJECTS)]
        for k, ref in enumerate(("human_to_GPT-4", *WRITERS)):
            steps = [_words(rng, rng.randint(3, 30)) for _ in range(rng.randint(2, 6))]
            out.append({"problem": f"Problem {p}: find $x$.", "answer": str(p), "eval_solution": steps,
                        "solution_reference": ref, "solution_type": "chosen" if k == 0 else "rejected",
                        "subject": subject, "level": 1 + p % 5, "problem_id": p, "id": 10 * p + k})  # fmt: skip
    return out


def write_rewardmath(path: Path, problems: int = 14, seed: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rewardmath_records(problems, seed), indent=4), encoding="utf-8")
    return path


MRB_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("language", pa.string()),
        ("prompt", pa.string()),
        ("chosen", pa.string()),
        ("rejected", pa.string()),
        ("chosen_model", pa.string()),
        ("rejected_model", pa.string()),
        ("source", pa.string()),
        ("category", pa.string()),
    ]
)
MRB_CATEGORIES = {
    "Chat": ("alpacaeval-easy", "alpacaeval-length", "alpacaeval-hard", "mt-bench-easy", "mt-bench-med"),
    "Chat Hard": (
        "mt-bench-hard",
        "llmbar-natural",
        "llmbar-adver-neighbor",
        "llmbar-adver-GPTInst",
        "llmbar-adver-GPTOut",
        "llmbar-adver-manual",
    ),  # fmt: skip
    "Safety": (
        "refusals-dangerous",
        "refusals-offensive",
        "xstest-should-refuse",
        "xstest-should-respond",
        "donotanswer",
    ),  # fmt: skip
    "Reasoning": ("math-prm", "hep-cpp", "hep-go", "hep-java", "hep-js", "hep-python", "hep-rust"),
}


def mrb_records(language: str, per_subset: int = 3, seed: int = 0) -> list[dict[str, Any]]:
    """One language's records: `per_subset` pairs of every subset, texts of random lengths."""
    rng = random.Random(f"{seed}/{language}")
    out = []
    for category, subsets in MRB_CATEGORIES.items():
        for source in subsets:
            for _ in range(per_subset):
                out.append({"id": len(out), "language": language, "prompt": f"{language} prompt {len(out)}",
                            "chosen": _words(rng, rng.randint(1, 40)), "rejected": _words(rng, rng.randint(1, 40)),
                            "chosen_model": "gpt-4", "rejected_model": "llama-2-7b", "source": source,
                            "category": category})  # fmt: skip
    return out


def write_mrb(root: Path, languages: tuple[str, ...], per_subset: int = 3, seed: int = 0) -> Path:
    """The hub's layout under root: <language>/test-00000-of-00001.parquet per language."""
    for lang in languages:
        write_parquet(root / lang / "test-00000-of-00001.parquet", mrb_records(lang, per_subset, seed), MRB_SCHEMA)
    return root


IF_TYPES = ("Single_Turn", "Multi_Turn", "System_Prompt")
IF_MODELS = ("Qwen3-8B", "GLM-4.5-Air", "Kimi-K2", "GPT-5", "Some-Other-Model")


def _messages(rng: random.Random, kind: str, i: int) -> list[dict[str, str]]:
    out = [{"role": "system", "content": f"Answer in {rng.choice(('French', 'haiku', 'JSON'))}."}] if kind == (
        "System_Prompt") else []  # fmt: skip
    for t in range(rng.randint(1, 6) if kind == "Multi_Turn" else 1):
        out.append({"role": "user", "content": f"instruction {i}.{t}: {_words(rng, 8)}"})
        out.append({"role": "assistant", "content": _words(rng, 10)})
    return out[:-1]


def if_record(i: int, rng: random.Random) -> dict[str, Any]:
    """One instruction: its checklist, 2-8 responses labelled per check, and the preference graph of their label
    counts (every two responses whose counts differ; equal counts are no edge)."""
    kind = IF_TYPES[i % 3]
    checklist = [f"check {c} of {i}" for c in range(rng.randint(2, 8))]
    k = rng.randint(2, 8)
    responses = [{"response_id": r, "response": _words(rng, rng.randint(3, 60)),
                  "labels": [rng.randint(0, 1) for _ in checklist]} for r in range(k)]  # fmt: skip
    passed = [sum(r["labels"]) for r in responses]
    graph = [{"chosen": {"response_id": a}, "rejected": {"response_id": b}}
             for a in range(k) for b in range(k) if passed[a] > passed[b]]  # fmt: skip
    return {
        "id": i,
        "response_generation_model": rng.choice(IF_MODELS),
        "instruction_type": kind,
        "messages": _messages(rng, kind, i),
        "checklist": checklist,
        "constraint_type": [{"item": c, "constraint_categories": [rng.choice(("Format", "Content", "Style"))],
                             "constraint_composition_types": [rng.choice(("And", "Chain"))]} for c in checklist],
        "responses": responses,
        "preference_graph": graph,
    }  # fmt: skip


def write_if(path: Path, instructions: int = 24, seed: int = 0) -> Path:
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([if_record(i, rng) for i in range(instructions)], ensure_ascii=False, indent=4),
                    encoding="utf-8")  # fmt: skip
    return path
