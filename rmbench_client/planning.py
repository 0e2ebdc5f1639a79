"""`run --dry-run`: how many prompts and units a run has, how many the run directory's store already holds for
exactly this computation (same models, templates and inputs), and how many would be sent. Contacts the servers for
their identity and fingerprint, reads the store read-only, and writes nothing."""

from __future__ import annotations

import asyncio
from typing import Any

from . import benchmarks
from . import constants as C
from .config import RunConfig
from .score_store import ScoreStore, unit_key


def plan(cfg: RunConfig) -> dict[str, Any]:
    from .model_kinds.factory import open_model_kind  # the HTTP stack, only when servers are asked
    from .runner import epoch_identity, load_examples, part_prefixes

    bench = benchmarks.get(cfg.benchmark)
    _, examples = load_examples(cfg)
    path = cfg.out_dir() / C.STORE_FILE
    store = ScoreStore(path, read_only=True) if path.is_file() else None

    async def count() -> dict[str, Any]:
        async with open_model_kind(cfg, bench.judge_mode) as model:
            identity = epoch_identity(model.identity, store, record=False) if store else None
            prefixes = part_prefixes(model, identity) if identity is not None else None
            # per prompt, per unit: its keys, one per part of its value
            keys = [
                [tuple(unit_key(p, u.material) for p in prefixes or [""]) for u in model.units(ex)] for ex in examples
            ]
            stored = store.get_many(k for ks in keys for u in ks for k in u) if store and prefixes else {}
            done = sum(all(k in stored for u in ks for k in u) for ks in keys)
            return {
                "prompts": len(examples),
                "units": sum(len(ks) for ks in keys),
                "pairwise": model.pairwise,
                "stored_units": sum(all(k in stored for k in u) for ks in keys for u in ks),
                "stored_prompts": done,
                "pending_prompts": len(examples) - done,
                "to_send": sum(len({u for u in ks if any(k not in stored for k in u)}) for ks in keys),  # once each
                "out_dir": str(cfg.out_dir()),
            }

    try:
        return asyncio.run(count())
    finally:
        if store is not None:
            store.close()
