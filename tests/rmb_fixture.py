"""RMB test files in the repository's exact layout and schema (RMB_dataset/<set>/<goal>/.../<scenario>.json, each a
JSON list; fields as in Zhou-Zoey/RMB-Reward-Model-Benchmark at commit 2be3180): nothing is downloaded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def turn(content: str, role: str = "user") -> dict[str, str]:
    return {"content": content, "language": "English", "role": role}


def answer(text: str, model: str = "Llama-2-70b-chat-hf") -> dict[str, str]:
    return {"llm_name": model, "answer": text}


def pair(uid: str, scenario: str, prompt: str, chosen: str, reject: str) -> dict[str, Any]:
    return {
        "pair_uid": uid,
        "conversation_input": [turn(prompt)],
        "chosen": answer(chosen, "gemini-1.5-pro-exp-0801"),
        "reject": answer(reject),
        "category_path": f"Pairwise_set/{scenario}",
    }


def bon(uid: str, scenario: str, prompt: str, best: str, losers: list[str]) -> dict[str, Any]:
    return {
        "conversation_input": [turn(prompt)],
        "bon_best": answer(best, "gemini-1.5-pro-exp-0801"),
        "loser_list": [answer(t, "Mistral-7B-Instruct-v0.1") for t in losers],
        "bon_uid": uid,
        "category_path": f"BoN_set/{scenario}",
    }


def write_rmb(root: Path, records: list[dict[str, Any]]) -> Path:
    """Each record into the file its category_path names, under root/RMB_dataset."""
    files: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        files.setdefault(r["category_path"], []).append(r)
    for path, recs in files.items():
        target = root / "RMB_dataset" / f"{path}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(recs, indent=2, ensure_ascii=False), encoding="utf-8")
    return root / "RMB_dataset"
