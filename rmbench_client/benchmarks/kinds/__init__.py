"""Benchmark kinds: what a family of benchmarks shares, so that a benchmark declares only what it decides (its name
and title, its data, its groups, its kind) and gets the rest from its kind (`spec.Kind`; docs/plugins.md):

- `PAIRS` (`pairs.py`): one chosen and one rejected response per prompt, in groups: accuracy per group, over every
  prompt and as the groups' mean, RewardBench's per-sample line, the table. Your own pairs, JudgeBench, plug-ins;
  RewardBench, RM-Bench, RMB and the PPE sets compare chosen with rejected too, with numbers of their own.
- `STEPS` (`steps.py`): one solution's steps, each labelled correct or erroneous, scored by a process model: the
  line of step scores and labels; each benchmark its own numbers (PRMBench, ProcessBench).

`KINDS` has them by name. This folder imports `benchmarks/spec.py`, `benchmarks/shared/` and the package's leaves
(`errors`, `examples`, `constants`); the benchmarks' folders import it, never the other way.
"""

from __future__ import annotations

from ..spec import Kind
from . import pairs, steps

PAIRS = Kind("pairs", numbers=pairs, shows=pairs, lines=pairs.Lines)
STEPS = Kind("steps", numbers=None, shows=None, lines=steps.Lines, chosen_vs_rejected=False, process=True)
KINDS = {kind.name: kind for kind in (PAIRS, STEPS)}
