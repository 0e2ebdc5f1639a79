"""`run --dry-run`: how many prompts and units a run has, how many the run directory's store already holds for
exactly this computation (same models, templates and inputs), and how many would be sent. Contacts the servers for
their identity and fingerprint, reads the store read-only, and writes nothing. With --fresh the store is not read:
a fresh run removes it and sends everything."""

from __future__ import annotations

import asyncio
from typing import Any

from .. import constants as C
from ..benchmarks import registry as benchmarks
from ..config.schema import RunConfig
from .score_store import ScoreStore, UnitKeys


def plan(cfg: RunConfig, fresh: bool = False) -> dict[str, Any]:
    from ..model_kinds.factory import open_model_kind  # the HTTP stack, only when servers are asked
    from .runner import load_examples
    from .scoring_loop import epoch_identity

    bench = benchmarks.get(cfg.benchmark)
    _, examples = load_examples(cfg, bench)
    path = cfg.out_dir() / C.STORE_FILE
    store = ScoreStore(path, read_only=True) if path.is_file() and not fresh else None

    async def count() -> dict[str, Any]:
        async with open_model_kind(cfg, bench.judge_mode, bench.process) as model:
            identity = epoch_identity(model.identity, store, record=False) if store else None
            unit_keys = UnitKeys(identity)
            keys = [[unit_keys.of(u.material, u.role) for u in model.units(ex)] for ex in examples]
            stored = store.get_many(k for ks in keys for k in ks) if store and identity is not None else {}
            done = sum(all(k in stored for k in ks) for ks in keys)
            return {
                "prompts": len(examples),
                "units": sum(len(ks) for ks in keys),
                "pairwise": model.pairwise,
                "stored_units": len(stored),
                "stored_prompts": done,
                "pending_prompts": len(examples) - done,
                # a unit repeated, in a prompt or across prompts (the same response), goes out once
                "to_send": len({k for ks in keys for k in ks if k not in stored}),
                "out_dir": str(cfg.out_dir()),
                "fresh": fresh,
            }

    try:
        return asyncio.run(count())
    finally:
        if store is not None:
            store.close()
