"""PRMBench (`benchmark: prmbench`): PRMScore by hand (ties at the threshold, steps past a cut, upstream's -1 for
an undefined F1, the pooled overall number that is not the mean of the columns), against a plain re-statement of
upstream's per-step loop on random solutions, the real files' quirks (error steps past the end, repeated ids), a
baseline run over all 6,216 real records re-scored through `score`, and `data list`'s checksums."""

from __future__ import annotations

import json
import random

import msgspec
import pytest
from helpers_cli import cli, one_error_line, rescored, summary
from helpers_data import rmbench_dir

from rmbench_client.benchmarks import registry
from rmbench_client.benchmarks.prmbench import constants as prm_c
from rmbench_client.benchmarks.prmbench import scoring as prmbench
from rmbench_client.benchmarks.prmbench.summary import Counts, Cut, PRMBenchSummary
from rmbench_client.cli.data import inventory
from rmbench_client.datasets import load_dataset
from rmbench_client.errors import DataError
from rmbench_client.examples import PromptScores
from rmbench_client.results import typed as results
from rmbench_client.results.summary import read_summary
from rmbench_client.results.typed import Estimate


def prmbench_dir():
    d = rmbench_dir().parent / "prmbench"
    if not (d / "prm_test_p12_multi_solutions.jsonl").is_file():
        pytest.skip(f"shared PRMBench data not found in {d}; set RMBENCH_DATA_DIR to the shared rm-bench directory")
    return d


def sol(rid: str, group: str, labels: tuple[int, ...], *scores: float) -> PromptScores:
    return PromptScores(rid, group, (), (), steps=scores, step_labels=labels)


def test_prmscore_by_hand():
    recs = [
        sol("a", "circular", (1, 0, 0), 0.9, 0.5, 0.2),  # TP; a tie at 0.5 is judged erroneous: TN; TN
        sol("b", "circular", (1, 0, 1), 0.4, 0.7),  # FN, FP; the third step is past the cut: not counted
        sol("c", "multi_solutions", (1, 1), 0.6, 0.5),  # TP, FN (the tie)
        sol("d", "redundency", (1, 1), 0.8, 0.9),  # TP, TP: no erroneous step at all
    ]
    s = prmbench.score(recs, samples=100)
    assert s.details["circular"].counts == Counts(TP=1, FP=1, TN=2, FN=1)
    # circular: F1 = 2PR/(P+R) with P = R = 1/2; negative F1 with P = R = 2/3
    assert s.classes["circular"] == pytest.approx((0.5 + 2 / 3) / 2)
    assert s.classes["multi_solutions"] == pytest.approx(2 / 3)  # F1 alone: P = 1, R = 1/2
    # redundency: F1 1, negative F1 upstream's -1 (no erroneous step: 0/0 precision and recall): max(0, 0) = 0
    assert s.details["redundency"].negative_f1 == -1.0
    assert s.classes["redundency"] == 0.0
    # each undefined figure with its reason: the summary's `undefined`, the table's row, the API
    assert s.undefined == {
        "multi_solutions/wrong_step_acc": "no erroneous step in multi_solutions",
        "redundency/negative_f1": "no erroneous step; PRMScore counts it as -1, as upstream does",
        "redundency/wrong_step_acc": "no erroneous step in redundency",
    }
    bench = registry.get("prmbench")
    groups = results.scores_of(read_summary(bench.summary_json(s), "summary.json")).groups
    shown = {g.name: g.numbers for g in groups}
    assert shown["redundency (NR)"]["F1 erroneous"] == Estimate(None, reason=s.undefined["redundency/negative_f1"])
    assert shown["multi_solutions (MS)"]["F1 erroneous"].reason == "no erroneous step in multi_solutions"
    assert prmbench.undefined_reasons({"x": s.details["circular"]}) == {}
    assert s.groups == pytest.approx({"simplicity": (0.0 + (0.5 + 2 / 3) / 2) / 2, "sensitivity": 2 / 3})
    # overall over the pooled steps: TP 4, FP 1, TN 2, FN 2
    f1, neg = 2 * 0.8 * (4 / 6) / (0.8 + 4 / 6), 2 * 0.5 * (2 / 3) / (0.5 + 2 / 3)
    assert s.overall == pytest.approx((f1 + neg) / 2)
    assert s.overall != pytest.approx(sum(s.classes.values()) / 3)  # not the mean of the columns
    assert isinstance(s.cut, Cut) and s.cut.solutions == 1 and s.cut.steps == 1
    assert s.steps_scored == 9
    lo, hi = s.ci.overall
    assert lo <= s.overall <= hi
    # a lower threshold: every step of "a" is judged correct
    assert prmbench.score(recs[:1], threshold=0.1, samples=10).details["circular"].counts.FP == 2


def test_the_summary_round_trips_through_json():
    """summary.json's object back to the typed summary and out again, key for key and in order; a summary written
    without its optional `cut` reads back with it unset, and the run's own fields are ignored."""
    bench = registry.get("prmbench")
    recs = [sol("a", "circular", (1, 0, 0), 0.9, 0.5, 0.2), sol("b", "circular", (1, 0, 1), 0.4, 0.7),
            sol("c", "multi_solutions", (1, 1), 0.6, 0.5), sol("d", "deception", (0, 1), 0.8)]  # fmt: skip
    raw = bench.summary_json(prmbench.score(recs, samples=50))
    assert list(raw)[-3:] == ["ci", "cut", "undefined"]
    assert raw["details"]["circular"]["counts"] == {"TP": 1, "FP": 1, "TN": 2, "FN": 1}
    assert isinstance(raw["details"]["circular"]["n"], int) and raw["details"]["deception"]["wrong_step_acc"] == 0.0
    back = bench.read_summary(json.loads(json.dumps(raw | {"seed": 0, "scored": 4})))
    assert isinstance(back, PRMBenchSummary) and isinstance(back.cut, Cut)
    assert json.dumps(bench.summary_json(back), indent=2) == json.dumps(raw, indent=2)
    old = {k: v for k, v in raw.items() if k not in ("cut", "undefined")}
    read = bench.read_summary(json.loads(json.dumps(old)))
    assert (
        read.cut is msgspec.UNSET
        and read.undefined is msgspec.UNSET
        and json.dumps(bench.summary_json(read)) == json.dumps(old)
    )
    assert bench.table(read, "t").caption == "threshold 0.5"
    assert bench.table(back, "t").caption == "threshold 0.5; 2 solution(s) cut: 2 step(s) not counted"


def upstream_counts(labels: list[int], scores: list[float], threshold: float) -> list[int]:
    """PRMBench's eval_on_hallucination_step restated: a loop over the steps a model scored, 1-based error steps."""
    errors = [i + 1 for i, label in enumerate(labels) if label == 0]
    judged = [v > threshold for v in scores]
    tp = fp = tn = fn = 0
    for idx in range(len(judged)):
        if idx + 1 in errors:
            fp, tn = (fp + 1, tn) if judged[idx] else (fp, tn + 1)
        else:
            tp, fn = (tp + 1, fn) if judged[idx] else (tp, fn + 1)
    return [tp, fp, tn, fn]


def upstream_f1(p_num: int, p_den: int, r_den: int) -> float:
    precision = p_num / p_den if p_den else -1
    recall = p_num / r_den if r_den else -1
    return 2 * precision * recall / (precision + recall) if precision + recall != 0 else -1


def upstream_score(counts: list[int], correct_only: bool) -> float:
    tp, fp, tn, fn = counts
    f1, neg = upstream_f1(tp, tp + fp, tp + fn), upstream_f1(tn, tn + fn, tn + fp)
    return max(f1 if correct_only else 0.5 * f1 + 0.5 * neg, 0)


@pytest.mark.parametrize("threshold", [0.5, 0.3])
def test_matches_upstreams_loop_on_random_solutions(threshold):
    rng = random.Random(7)
    recs, by_class, total = [], {}, [0, 0, 0, 0]
    for k in range(300):
        group = prm_c.CLASSES[k % len(prm_c.CLASSES)]
        n = rng.randint(1, 9)
        labels = [1 if group == "multi_solutions" or rng.random() < 0.7 else 0 for _ in range(n)]
        scores = [round(rng.random(), 1) for _ in range(rng.randint(0, n))]  # ties at 0.5 and cuts
        recs.append(sol(str(k), group, tuple(labels), *scores))
        counts = upstream_counts(labels, scores, threshold)
        by_class[group] = [a + b for a, b in zip(by_class.get(group, [0] * 4), counts, strict=True)]
        total = [a + b for a, b in zip(total, counts, strict=True)]
    s = prmbench.score(recs, threshold=threshold, samples=20)
    for group, counts in by_class.items():
        assert s.classes[group] == pytest.approx(upstream_score(counts, group == "multi_solutions")), group
    assert s.overall == pytest.approx(upstream_score(total, False))


def test_more_scores_than_steps_and_foreign_classes_are_errors():
    with pytest.raises(DataError, match="x: 3 step scores for 2 steps"):
        prmbench.score([sol("x", "circular", (1, 0), 0.1, 0.2, 0.3)])
    with pytest.raises(DataError, match="'chat' is no PRMBench classification"):
        prmbench.score([sol("x", "chat", (1, 0), 0.1)])


def test_real_files_and_their_quirks():
    data = load_dataset("prmbench", prmbench_dir())
    assert len(data.examples) == 6216 - 5 and data.missing == []
    assert data.duplicates == tuple(f"multi_solutions_prm_test_p2_{n}" for n in (863, 889, 997, 1053, 1058))
    by_id = {ex.id: ex for ex in data.examples}
    first = json.loads((prmbench_dir() / "prm_test_p12_multi_solutions.jsonl").read_text().splitlines()[0])
    kept = by_id[f"multi_solutions_{first['idx']}"]
    assert kept.step_labels == (1,) * len(first["modified_process"])  # no error step in the multi-solution set
    ex = by_id["circular_prm_test_p1_0"]
    assert ex.steps[0].startswith("Let's call the price")  # "1. " removed, as mr_eval's models send the steps
    assert ex.step_labels == (1, 1, 0, 0, 0, 1, 1)  # error_steps [3, 4, 5], 1-based
    assert sum(len(e.steps) for e in data.examples) == 83456 - 85  # the five later duplicates' steps left out
    past = [e for e in data.examples if e.extra["past_end"]]
    assert len(past) == 100 and sum(0 not in e.step_labels for e in past) == 16


@pytest.mark.slow
def test_baseline_over_every_real_record_rescored(tmp_path):
    out = tmp_path / "run"
    proc = cli("run", "--benchmark", "prmbench", "--data", str(prmbench_dir()), "--model", "baseline:random",
               "--out", str(out), "--no-progress", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    s = summary(out)
    assert s["complete"] and s["scored"] == 6211 and s["steps_scored"] == 83456 - 85
    assert s["duplicates"]["ids"][0] == "multi_solutions_prm_test_p2_863"
    assert s["data_notes"][0].startswith("100 solution(s) name an error step past their last step (16 of them")
    bench = registry.get("prmbench")
    numbers = bench.summary_json(bench.read_summary(s))  # the typed summary of a real run, back as summary.json has it
    assert list(numbers) == list(s)[: len(numbers)] and numbers == {k: s[k] for k in numbers}
    lines = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    total = [0, 0, 0, 0]
    for x in lines:
        assert len(x["step_scores"]) == len(x["step_labels"])
        total = [a + b for a, b in zip(total, upstream_counts(x["step_labels"], x["step_scores"], 0.5), strict=True)]
    assert s["overall"] == pytest.approx(upstream_score(total, False))
    assert abs(s["overall"] - 0.43) < 0.03  # random scores: F1s near 0.62 and 0.25
    again = rescored(out)
    assert again["classes"] == s["classes"] and again["overall"] == s["overall"] and again["ci"] == s["ci"]
    high = json.loads(cli("score", str(out / "samples.jsonl"), "--json", "--threshold", "0.8").stdout)
    assert high["threshold"] == 0.8 and high["overall"] != s["overall"]


def test_threshold_from_the_config_and_bad_values(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(f"benchmark: prmbench\nmodel: baseline:random\nprm:\n  threshold: 0.25\ndata: {prmbench_dir()}\n")
    out = tmp_path / "run"
    proc = cli("run", "--config", str(config), "--limit", "50", "--out", str(out), "--no-progress", "--json")
    assert proc.returncode == 0, proc.stderr
    assert summary(out)["threshold"] == 0.25 and summary(out)["partial"]
    config.write_text("benchmark: prmbench\nmodel: baseline:random\nprm:\n  threshold: 1.5\n")
    one_error_line(cli("run", "--config", str(config)), 2, "prm.threshold")


def test_data_list_knows_the_files_checksums(tmp_path):
    (tmp_path / "prmbench").symlink_to(prmbench_dir(), target_is_directory=True)
    entry = next(e for e in inventory(tmp_path) if e["benchmark"] == "prmbench")
    assert entry["prompts"] == 6211 and len(entry["files"]) == 25
    assert set(entry["files"].values()) == {"ok"}
    proc = cli("data", "fetch", "prmbench", "--dir", str(tmp_path / "d"))
    assert proc.returncode == 2 and proc.stderr.splitlines()[-1].startswith("error: prmbench has no hub dataset")
    assert "Traceback" not in proc.stderr
