"""Each benchmark's own file formats, both ways: files built exactly as the benchmarks' scripts build them re-score
through `rmbench-client score`, and the files this project writes are byte-for-byte in their layout, read back to
the same scores, and give the benchmarks' own numbers when read their way."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_scoring import score

from rmbench_client.benchmarks import registry
from rmbench_client.benchmarks.reward_bench import files as rb_files
from rmbench_client.benchmarks.reward_bench.scoring import from_subsets
from rmbench_client.benchmarks.reward_bench_2 import files as rb2_files
from rmbench_client.benchmarks.rm_bench import files as rm_files
from rmbench_client.benchmarks.shared.eval_sets import hub_json
from rmbench_client.cli import main
from rmbench_client.errors import DataError
from rmbench_client.examples import Example, PromptScores
from rmbench_client.results.score_files import read_scores, summarize

REWARD_BENCH = registry.get("reward-bench")


def save_to_hub(path: Path, data: dict | list) -> Path:
    """reward-bench's `save_to_hub` on disk: a dict as json.dumps(indent=4, sort_keys=True), no newline at the end;
    a list as each record dumped the same way plus a newline, one after another."""
    with path.open("w") as f:
        if isinstance(data, dict):
            f.write(json.dumps(data, indent=4, sort_keys=True))
        else:
            for record in data:
                f.write(json.dumps(record, indent=4, sort_keys=True) + "\n")
    return path


def score_json(capsys, *paths: Path) -> dict[str, Any]:
    assert main(["score", *map(str, paths), "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


# --- reward-bench v1 ----------------------------------------------------------------------------------------------

RB_SUBSETS = ("alpacaeval-easy", "mt-bench-hard", "refusals-dangerous", "math-prm", "hep-python")


def rb_scores(seed: int) -> list[PromptScores]:
    rng = random.Random(seed)
    out = []
    for k, subset in enumerate(RB_SUBSETS):
        for i in range(8):
            c, r = rng.gauss(0.5, 1), rng.gauss(0, 1)
            out.append(PromptScores(str(100 * k + i), subset, (c,), (r if i % 5 else c,)))  # a few ties
    return out


def run_rm_columns(scores: list[PromptScores]) -> dict[str, Any]:
    """`out_dataset.to_dict()` of reward-bench's run_rm.py plus its scalar keys: text_chosen, text_rejected,
    results (strict >), subset, id, scores_chosen, scores_rejected."""
    return {
        "text_chosen": [f"<|user|>\nq{s.id}\n<|assistant|>\ngood" for s in scores],
        "text_rejected": [f"<|user|>\nq{s.id}\n<|assistant|>\nbad" for s in scores],
        "results": [1 if s.chosen[0] > s.rejected[0] else 0 for s in scores],
        "subset": [s.group for s in scores],
        "id": [int(s.id) for s in scores],
        "scores_chosen": [s.chosen[0] for s in scores],
        "scores_rejected": [s.rejected[0] for s in scores],
        "model": "org/rm",
        "model_type": "Seq. Classifier",
        "chat_template": "tulu",
    }


@pytest.mark.parametrize("layout", ["columns", "records one after another"])
def test_reward_bench_eval_set_scores_rescore(tmp_path, capsys, layout):
    scores = rb_scores(1)
    columns = run_rm_columns(scores)
    if layout == "columns":
        data: Any = columns
    else:
        keys = [k for k, v in columns.items() if isinstance(v, list)]
        data = [{k: columns[k][i] for k in keys} for i in range(len(scores))]
    path = save_to_hub(tmp_path / "rm.json", data)
    assert score_json(capsys, path) == score("reward-bench", scores)


def test_reward_bench_generative_scores_rescore(tmp_path, capsys):
    """run_generative.py: per prompt only `results` (1, 0, or 0.5 for no verdict), no scores, no chat_template."""
    rng = random.Random(2)
    results = [rng.choice([0, 1, 0.5]) for _ in range(15)]
    subsets = [RB_SUBSETS[i % 5] for i in range(15)]
    columns = {
        "text_chosen": [[{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]] * 15,
        "text_rejected": [[{"role": "user", "content": "q"}, {"role": "assistant", "content": "b"}]] * 15,
        "results": results,
        "subset": subsets,
        "id": list(range(15)),
        "model": "gpt-4o",
        "model_type": "Generative",
    }
    s = score_json(capsys, save_to_hub(tmp_path / "gen.json", columns))
    expect = {sub: float(np.mean([r for r, x in zip(results, subsets, strict=True) if x == sub])) for sub in RB_SUBSETS}
    assert s["subsets"] == pytest.approx(expect, abs=1e-15)


def test_reward_bench_results_file(tmp_path, capsys):
    scores = rb_scores(3)
    summary = score("reward-bench", scores)
    grouped = {"model": "org/rm", "model_type": "Seq. Classifier", "chat_template": "tokenizer", **summary["subsets"]}
    s = score_json(capsys, save_to_hub(tmp_path / "eval-set.json", grouped))
    assert s == {k: summary[k] for k in ("benchmark", "subsets", "sections", "score")}
    assert s == REWARD_BENCH.summary_json(from_subsets(summary["subsets"]))


def test_reward_bench_files_we_write_round_trip(tmp_path):
    scores = rb_scores(4)
    summary = score("reward-bench", scores)
    typed = REWARD_BENCH.read_summary(summary)
    results, per_prompt = rb_files.write_files(tmp_path, "org/rm-x", "Seq. Classifier", typed, scores, "tokenizer")
    assert results == tmp_path / "eval-set" / "org" / "rm-x.json"
    assert per_prompt == tmp_path / "eval-set-scores" / "org" / "rm-x.json"
    for path in (results, per_prompt):
        text = path.read_text(encoding="utf-8")
        assert text == json.dumps(json.loads(text), indent=4, sort_keys=True)  # save_to_hub's bytes
    grouped = json.loads(results.read_text(encoding="utf-8"))
    assert (grouped["model"], grouped["model_type"], grouped["chat_template"]) == (
        "org/rm-x",
        "Seq. Classifier",
        "tokenizer",
    )
    columns = json.loads(per_prompt.read_text(encoding="utf-8"))
    assert set(columns) == {
        "id",
        "subset",
        "scores_chosen",
        "scores_rejected",
        "results",
        "model",
        "model_type",
        "chat_template",
    }
    assert columns["id"][:2] == [0, 1] and columns["scores_chosen"][0] == scores[0].chosen[0]
    # reward-bench's own reading: a subset's accuracy is the mean of its `results` (ties written as wrong)
    for subset, acc in summary["subsets"].items():
        mine = [r for r, s in zip(columns["results"], columns["subset"], strict=True) if s == subset]
        assert sum(mine) / len(mine) == acc
    benchmark, back = read_scores([per_prompt])
    assert (benchmark, back) == ("reward-bench", scores)
    assert score(benchmark, back) == summary


def test_reward_bench_model_types_and_bad_names(tmp_path):
    assert rb_files.model_type("reward") == "Seq. Classifier"
    assert rb_files.model_type("dpo") == "DPO" and rb_files.model_type("dpo", "sum") == "DPO Ref. Free"
    assert rb2_files.model_type("judge") == "Generative RM"
    scores = rb_scores(5)
    with pytest.raises(DataError, match="cannot name a result file"):
        rb_files.write_files(tmp_path, "../escape", "DPO", REWARD_BENCH.score(scores), scores, None)


# --- reward-bench v2 ----------------------------------------------------------------------------------------------

RB2_SUBSETS = ("Factuality", "Precise IF", "Math", "Safety", "Focus")


def rb2_scores(seed: int) -> list[PromptScores]:
    rng = random.Random(seed)
    out = []
    for k, subset in enumerate(RB2_SUBSETS):
        for i in range(6):
            s = [float(rng.randint(0, 3)) for _ in range(4)]  # small integers: ties at the top happen
            out.append(PromptScores(str(10 * k + i), subset, (s[0],), tuple(s[1:])))
    for n in range(4):
        out.append(PromptScores(f"ref:{n}", "Ties", (rng.gauss(1, 1),), (rng.gauss(0, 1), rng.gauss(0, 1))))
        tied = (rng.gauss(1, 1), rng.gauss(1, 1), rng.gauss(1, 1))
        out.append(PromptScores(f"tied:{n}", "Ties", tied, (rng.gauss(0, 1),)))
    return out


def run_v2_columns(scores: list[PromptScores]) -> dict[str, Any]:
    """reward-bench's run_v2.py: `reroll_and_score_dataset` then `add_column("num_correct")`, `.to_dict()`:
    text and scores per prompt as lists, results the 1/k credit (Ties rows keep it: run_v2 compares the subset
    with "ties" in lower case when it resets them), subset, id, num_correct; plus model, model_type, chat_template."""
    scores_col = [[*s.chosen, *s.rejected] for s in scores]
    results = []
    for row in scores_col:
        top = max(row)
        results.append(1 / sum(v == top for v in row) if row[0] == top else 0)
    return {
        "text": [[f"answer {i}" for i in range(len(row))] for row in scores_col],
        "scores": scores_col,
        "results": results,
        "subset": [s.group for s in scores],
        "id": [s.id for s in scores],
        "num_correct": [len(s.chosen) for s in scores],
        "model": "org/rm",
        "model_type": "Seq. Classifier",
        "chat_template": "tokenizer",
    }


def test_reward_bench_2_eval_set_scores_rescore(tmp_path, capsys):
    scores = rb2_scores(1)
    s = score_json(capsys, save_to_hub(tmp_path / "rm.json", run_v2_columns(scores)))
    assert s == json.loads(json.dumps(score("reward-bench-2", scores)))


def test_reward_bench_2_generative_scores_rescore(tmp_path, capsys):
    """run_generative_v2.py: non-Ties rows carry only `results` (4-way verdict: 1, 0, 0.25 on error); Ties rows
    carry the ratings (-1 unparsed) as `scores` and results None; concatenated, missing columns are None."""
    rng = random.Random(7)
    plain = [(f"{i}", RB2_SUBSETS[i % 5], rng.choice([1, 0, 0.25])) for i in range(10)]
    ties = [("ref:0", [8], [3, -1]), ("tied:0", [7, 9], [2]), ("ref:1", [4], [6]), ("tied:1", [5, 5], [-1])]
    rows = [{"id": i, "subset": s, "results": r, "num_correct": 1, "scores": None} for i, s, r in plain]
    rows += [{"id": i, "subset": "Ties", "results": None, "num_correct": len(c), "scores": c + w} for i, c, w in ties]
    columns = {k: [row[k] for row in rows] for k in rows[0]} | {"model": "openai/gpt-4o", "model_type": "Generative RM"}
    s = score_json(capsys, save_to_hub(tmp_path / "gen.json", columns))
    for subset in RB2_SUBSETS:
        assert s["subsets"][subset] == pytest.approx(np.mean([r for _, x, r in plain if x == subset]), abs=1e-15)
    # Ties by hand: ref accuracy 1/2 (8-3 > 0; 4-6 < 0), tied accuracy 1 (7-2, 5-(-1)); N=0: spread 2, gap 5,
    # ref gap 5: preferred and hard; N=1: spread 0, gap 6, ref gap -2: preferred only; margins tanh(5/2-1), -1
    expected = 0.3 * 1 + 0.3 * 0.5 + 0.2 * 1 + 0.2 * 0.5 + 0.01 * (math.tanh(1.5) - 1) / 2
    assert s["subsets"]["Ties"] == pytest.approx(expected, abs=1e-15)


def test_reward_bench_2_files_we_write_round_trip(tmp_path, capsys):
    scores = rb2_scores(2)
    summary = score("reward-bench-2", scores)
    from rmbench_client.benchmarks.reward_bench_2 import BENCHMARK  # its files are written from the typed summary

    typed = BENCHMARK.read_summary(summary)
    results, per_prompt = rb2_files.write_files(tmp_path, "org/rm", "Seq. Classifier", typed, scores, "tokenizer")
    columns = json.loads(per_prompt.read_text(encoding="utf-8"))
    assert per_prompt.read_text(encoding="utf-8") == hub_json(columns)
    expected = run_v2_columns(scores)
    for key in ("scores", "results", "subset", "id", "num_correct", "model", "model_type", "chat_template"):
        assert columns[key] == expected[key], key  # run_v2.py's columns (all but the formatted text)
    assert (read_scores([per_prompt])[1]) == scores
    assert score_json(capsys, per_prompt) == json.loads(json.dumps(summary))
    s = score_json(capsys, results)
    assert s == {"benchmark": "reward-bench-2", "subsets": summary["subsets"], "score": summary["score"]}


# --- RM-Bench -----------------------------------------------------------------------------------------------------


def rm_examples_and_scores(seed: int) -> tuple[dict[str, Example], list[PromptScores]]:
    rng = random.Random(seed)
    examples, scores = {}, []
    for i, (domain, sub) in enumerate([("chat", "chat"), ("math", "math"), ("safety", "safety-refuse")] * 5):
        rid = f"{sub}/{i}"
        examples[rid] = Example(
            rid, "rm-bench", domain, f"q{i}", ("c0", "c1", "c2"), ("r0", "r1", "r2"), sub, {"subset": sub}
        )
        scores.append(
            PromptScores(
                rid, domain, tuple(rng.gauss(1, 1) for _ in range(3)), tuple(rng.gauss(0, 1) for _ in range(3))
            )
        )
    return examples, scores


def rm_bench_compute_accuracy(results: list[dict[str, Any]]) -> dict[str, float]:
    """RM-Bench's compute_accuracy restated: per domain (by name prefix) a 3x3 matrix of c[i] > r[j]; hard = the
    upper triangle, normal = the diagonal, easy = the lower triangle; domain avg = their mean."""
    out = {}
    for domain in ("chat", "math", "code", "safety"):
        rows = [r for r in results if r["domain"].startswith(domain)]
        if not rows:
            continue
        m = np.zeros((3, 3))
        for r in rows:
            for i in range(3):
                for j in range(3):
                    m[i][j] += r["score_chosen"][i] > r["score_rejected"][j]
        m /= len(rows)
        hard, normal, easy = np.sum(np.triu(m, 1)) / 3, np.mean(np.diag(m)), np.sum(np.tril(m, -1)) / 3
        out[domain] = (hard + normal + easy) / 3
    return out


def test_rm_bench_output_file_rescores(tmp_path, capsys):
    """scripts/run_rm.py: the data records plus score_chosen / score_rejected, json.dump(indent=4); run_dpo.py
    leaves each score a 1-element list."""
    examples, scores = rm_examples_and_scores(1)
    for wrap in (False, True):
        records = []
        for s in scores:
            ex = examples[s.id]
            side = (lambda v: [[x] for x in v]) if wrap else list
            records.append(
                {"id": ex.id, "prompt": ex.prompt, "chosen": list(ex.chosen), "rejected": list(ex.rejected)}
                | {"domain": ex.subgroup, "score_chosen": side(s.chosen), "score_rejected": side(s.rejected)}
            )
        path = tmp_path / f"chat_filtered_rm_REWORD_MODEL_{wrap}.json"
        path.write_text(json.dumps(records, indent=4, ensure_ascii=False), encoding="utf-8")
        assert score_json(capsys, path) == json.loads(json.dumps(score("rm-bench", scores)))


def test_rm_bench_file_we_write_is_rm_benchs_and_round_trips(tmp_path):
    examples, scores = rm_examples_and_scores(2)
    summary = score("rm-bench", scores)
    path = rm_files.write_results(tmp_path, examples, scores)
    text = path.read_text(encoding="utf-8")
    records = json.loads(text)
    assert text == json.dumps(records, indent=4, ensure_ascii=False)
    assert list(records[0]) == [
        "id",
        "prompt",
        "chosen",
        "rejected",
        "domain",
        "subset",
        "score_chosen",
        "score_rejected",
    ]
    assert {r["domain"] for r in records} == {"chat", "math", "safety-refuse"}
    theirs = rm_bench_compute_accuracy(records)
    assert theirs == pytest.approx({d: v["avg"] for d, v in summary["domains"].items()}, abs=1e-12)
    benchmark, back = read_scores([path])
    assert (benchmark, back) == ("rm-bench", scores)
    assert score(benchmark, back) == summary
    with pytest.raises(DataError, match="not in the dataset"):
        rm_files.write_results(tmp_path, {}, scores)


# --- what `score` refuses -----------------------------------------------------------------------------------------


def test_results_and_per_prompt_files_do_not_mix(tmp_path):
    scores = rb_scores(6)
    per_prompt = save_to_hub(tmp_path / "p.json", run_rm_columns(scores))
    results = save_to_hub(tmp_path / "r.json", {"model": "m", **score("reward-bench", scores)["subsets"]})
    with pytest.raises(DataError, match="cannot be scored together"):
        summarize([results, per_prompt])
    with pytest.raises(DataError, match="naming no subset"):
        summarize([save_to_hub(tmp_path / "x.json", {"model": "m", "accuracy": 0.5})])
    with pytest.raises(DataError, match="a results file"):
        read_scores([results])


def test_unknown_benchmark_named_in_a_line(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"benchmark": "chess", "id": 1}) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="unknown benchmark 'chess'"):
        read_scores([path])
