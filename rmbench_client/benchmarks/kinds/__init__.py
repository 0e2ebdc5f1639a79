"""Benchmark kinds: what a family of benchmarks shares, so that a benchmark declares only what it decides (its name
and title, its data, its groups, its kind) and gets the rest from its kind (`spec.Kind`; docs/plugins.md):

- `PAIRS` (`pairs.py`): one chosen and one rejected response per prompt, in groups: accuracy per group, over every
  prompt and as the groups' mean, RewardBench's per-sample line, the table. Your own pairs, JudgeBench, plug-ins;
  RewardBench, RM-Bench, RMB and the PPE sets compare chosen with rejected too, with numbers of their own.
- `BEST_OF_N` (`best_of_n.py`): one chosen response ranked among several rejected ones: accuracy (the chosen
  above every rejected one) and mean reciprocal rank per group and overall. Best-of-N sets from a file; RewardMATH.
- `RANKING` (`ranking.py`): several rated responses per prompt: pairwise accuracy over the rated pairs and
  Kendall's tau-b per prompt. Rankings from a file; IF-RewardBench's preference graphs.
- `STEPS` (`steps.py`): one solution's steps, each labelled correct or erroneous, scored by a process model: the
  line of step scores and labels; each benchmark its own numbers (PRMBench, ProcessBench).

`KINDS` has them by name (the names a benchmark file's `family:` takes, `steps` aside). This folder imports
`benchmarks/spec.py`, `benchmarks/shared/` and the package's leaves (`errors`, `examples`, `constants`); the
benchmarks' folders import it, never the other way.
"""

from __future__ import annotations

from ..spec import Kind
from . import best_of_n, pairs, ranking, steps

PAIRS = Kind("pairs", numbers=pairs, shows=pairs, lines=pairs.Lines)
# a judge compares the chosen response with each rejected one (its credits: best_of_n.outcome)
BEST_OF_N = Kind("best-of-n", numbers=best_of_n.NUMBERS, shows=best_of_n, lines=best_of_n.Lines,
                 chosen_vs_rejected=False, best_of_n=True)  # fmt: skip
# a judge rates each response on its own (there is no chosen-rejected pair to compare): its rating is the score
RANKING = Kind("ranking", numbers=ranking.NUMBERS, shows=ranking, lines=ranking.Lines, chosen_vs_rejected=False,
               ranking=True, judge_mode="rating")  # fmt: skip
STEPS = Kind("steps", numbers=None, shows=None, lines=steps.Lines, chosen_vs_rejected=False, process=True)
KINDS = {kind.name: kind for kind in (PAIRS, BEST_OF_N, RANKING, STEPS)}
