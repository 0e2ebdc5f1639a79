"""The best-of-N and ranking kinds' numbers, held against computations written out here: a best-of-N prompt is right
only when the chosen answer beats every rejected one (a tie is wrong) and its rank counts ties against it; a
ranking's accuracy pools the rated pairs of every prompt and its Kendall's tau-b equals scipy's (variant b) on the
ratings and the scores; compare's per-prompt values give back every headline number; a line reads back to the
same summary."""

from __future__ import annotations

import random

import numpy as np
import pytest
from scipy.stats import kendalltau

from rmbench_client.benchmarks.kinds import best_of_n, ranking
from rmbench_client.errors import DataError
from rmbench_client.examples import Example, PromptScores


def bon(rid: str, group: str, chosen: float, *rejected: float) -> PromptScores:
    return PromptScores(rid, group, (chosen,), tuple(rejected))


def test_best_of_n_ties_are_wrong_and_ranked_against_the_chosen() -> None:
    recs = [
        bon("a", "g", 3.0, 1.0, 2.0),  # above both: right, rank 1
        bon("b", "g", 2.0, 1.0, 2.0),  # a tie with one: wrong, rank 2 (the tie ahead of it)
        bon("c", "h", 1.0, 3.0, 2.0, 0.0),  # two above: wrong, rank 3
        PromptScores("d", "h", (), (), results=(1.0, 0.5, 1.0)),  # a judge: a tie is no win, rank 2
    ]
    assert [best_of_n.outcome(r) for r in recs] == [(1.0, 1.0), (0.0, 0.5), (0.0, 1 / 3), (0.0, 0.5)]
    s = best_of_n.NUMBERS.score(recs, samples=50, benchmark="mine")
    assert s.benchmark == "mine" and s.n == {"g": 2, "h": 2}
    assert s.groups == {"g": {"accuracy": 0.5, "mrr": 0.75}, "h": {"accuracy": 0.0, "mrr": (1 / 3 + 0.5) / 2}}
    assert s.overall == {"accuracy": 0.25, "mrr": pytest.approx((1 + 0.5 + 1 / 3 + 0.5) / 4)}
    assert s.macro == {"accuracy": 0.25, "mrr": pytest.approx((0.75 + (1 / 3 + 0.5) / 2) / 2)}
    head = dict(best_of_n.NUMBERS.headline(s))
    assert list(head)[-1] == "accuracy" and list(dict(best_of_n.NUMBERS.headline_of("groups")(s)))[-1] == "macro"
    with pytest.raises(DataError, match="prompt x"):
        best_of_n.NUMBERS.score([bon("x", "g", float("nan"), 1.0)])


def test_compare_values_give_every_headline_number_back() -> None:
    rng = random.Random(3)
    recs = [bon(str(i), "abc"[i % 3], rng.randint(0, 4), *(rng.randint(0, 4) for _ in range(rng.randint(1, 5))))
            for i in range(60)]  # fmt: skip
    for kind, records in ((best_of_n.NUMBERS, recs), (ranking.NUMBERS, rankings(60))):
        s = kind.score(records, samples=20)
        values = kind.prompt_values(records)
        groups = sorted({r.group for r in records})
        means = {g: values[[r.group == g for r in records]].mean(axis=0) for g in groups}
        sizes = {g: sum(r.group == g for r in records) for g in groups}
        got = kind.headline_numbers(means, sizes)
        for name, value in kind.headline(s):
            assert got[name] == pytest.approx(value, abs=1e-12), name


def rankings(n: int, seed: int = 1) -> list[PromptScores]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        k = rng.randint(1, 6)
        ratings = [rng.randint(0, 2) for _ in range(k)]
        scores = [float(rng.randint(0, 3)) for _ in range(k)]
        out.append(PromptScores(str(i), "xy"[i % 2], tuple(scores), (), pairs=ranking.rated_pairs(ratings),
                                details={"ratings": ratings}))  # fmt: skip
    return out


def test_ranking_tau_b_is_scipys_and_accuracy_pools_the_rated_pairs() -> None:
    recs = rankings(300)
    for r in recs:
        c, d, e, scores = ranking.counts(r)
        if not e:
            continue
        ratings = r.details["ratings"] if r.details else []
        want = kendalltau(ratings, scores).statistic  # variant b
        assert ranking.tau_b(c, d, e, scores) == (0.0 if np.isnan(want) else pytest.approx(want, abs=1e-12))
    s = ranking.NUMBERS.score(recs, samples=20)
    for group in ("x", "y"):
        mine = [r for r in recs if r.group == group]
        right = sum(np.sign(r.chosen[i] - r.chosen[j]) > 0 for r in mine for i, j in r.pairs or ())
        pairs = sum(len(r.pairs or ()) for r in mine)
        taus = [ranking.tau_b(*ranking.counts(r)[:3], np.asarray(r.chosen)) for r in mine if r.pairs]
        assert s.groups[group]["accuracy"] == pytest.approx(right / pairs, abs=1e-12)
        assert s.groups[group]["tau"] == pytest.approx(np.mean(taus), abs=1e-12)
        assert s.pairs[group] == pairs
    assert s.unranked == sum(not r.pairs for r in recs)  # in no figure
    # scores that order nothing agree with nothing: tau 0, every rated pair wrong
    flat = ranking.NUMBERS.score([PromptScores("f", "x", (1.0, 1.0, 1.0), (), pairs=((0, 1), (0, 2)))], samples=5)
    assert flat.groups["x"] == {"accuracy": 0.0, "tau": 0.0}


def test_ranking_lines_read_back_to_the_same_summary() -> None:
    lines = ranking.Lines("mine", "group")
    recs = rankings(40)
    read = []
    for r in recs:
        ex = Example(r.id, "mine", r.group, "q", tuple("abcdef"[: len(r.chosen)]), (), pairs=r.pairs)
        line = lines.line(ex, r)
        assert line["pairs"] == [list(p) for p in r.pairs or ()]
        read.append(lines.read(line, "f: record", 0, None))
    assert ranking.NUMBERS.score(read, samples=10) == ranking.NUMBERS.score(recs, samples=10)
    with_ratings = lines.read({"benchmark": "mine", "id": "1", "group": "x", "scores": [1, 2, 3], "ratings": [3, 1, 3]},
                              "f", 0, None)  # fmt: skip
    assert with_ratings is not None and with_ratings.pairs == ((0, 1), (2, 1))
    for bad, words in (([[0, 0]], "two distinct"), ([[0, 5]], "two distinct"), ([[0, 1], [1, 0]], "once")):
        with pytest.raises(DataError, match=words):
            lines.read({"benchmark": "mine", "id": "1", "group": "x", "scores": [1, 2], "pairs": bad}, "f", 0, None)
