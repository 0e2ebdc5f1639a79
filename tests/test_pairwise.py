"""Your own preference data (`benchmark: pairwise`): loading with mapped field names and multi-turn prompts,
accuracy per subset / prompt-weighted / macro with intervals, and a server-free run that re-scores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers_scoring import score
from hub_schemas import write_parquet

from rmbench_client.benchmarks.kinds import pairs as pairwise
from rmbench_client.cli import main
from rmbench_client.config.loading import load_config
from rmbench_client.datasets import load_dataset
from rmbench_client.errors import DataError
from rmbench_client.examples import PromptScores
from rmbench_client.run.runner import run

CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Name a prime."},
    {"role": "assistant", "content": "2"},
    {"role": "user", "content": "Another one?"},
]


def pair(prompt: Any, chosen: str, rejected: str, **extra: Any) -> dict[str, Any]:
    return {"prompt": prompt, "chosen": chosen, "rejected": rejected, **extra}


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# --- scoring ------------------------------------------------------------------------------------------------------


def ps(rid: str, subset: str, c: float, r: float) -> PromptScores:
    return PromptScores(rid, subset, (c,), (r,))


def test_accuracy_prompt_weighted_and_macro():
    # subset a: 3 of 4 right (one tie counts as wrong); subset b: 0 of 1
    recs = [ps("1", "a", 2, 1), ps("2", "a", 3, 0), ps("3", "a", 1, 1), ps("4", "a", 5, 4), ps("5", "b", 0, 1)]
    s = pairwise.score(recs, samples=200)
    assert s.subsets == {"a": 0.75, "b": 0.0} and s.n == {"a": 4, "b": 1}
    assert s.accuracy == 3 / 5  # every prompt weighs the same
    assert s.macro_accuracy == (0.75 + 0.0) / 2  # every subset weighs the same
    assert isinstance(s.ci, pairwise.PairIntervals)
    for value, (lo, hi) in ((s.accuracy, s.ci.accuracy), (s.macro_accuracy, s.ci.macro_accuracy)):
        assert lo <= value <= hi
    assert s.ci.subsets["b"] == [0.0, 0.0]
    assert pairwise.score(recs, seed=1, samples=200).ci == pairwise.score(recs, seed=1, samples=200).ci


def test_judge_credits_and_empty_input():
    s = pairwise.score([PromptScores("1", "x", (), (), (0.5,)), PromptScores("2", "x", (), (), (1.0,))], samples=10)
    assert s.accuracy == 0.75
    empty = pairwise.score([], samples=10)
    assert empty.subsets == {} and empty.accuracy != empty.accuracy  # NaN: nothing scored


# --- loading ------------------------------------------------------------------------------------------------------


def test_defaults_multi_turn_and_formats(tmp_path):
    records = [pair("What is 2+2?", "4", "5"), pair(CONVERSATION, "3", "4", subset="chat", id="c1", note="kept")]
    for path in (write_jsonl(tmp_path / "mine.jsonl", records), tmp_path / "mine.json"):
        if path.suffix == ".json":
            path.write_text(json.dumps(records), encoding="utf-8")
        data = load_dataset("pairwise", path)
        first, second = data.examples
        assert (first.id, first.group, first.prompt) == ("0", "default", "What is 2+2?")  # id: the record index
        assert (second.id, second.group) == ("c1", "chat") and second.extra == {"note": "kept"}
        assert second.prompt == tuple(CONVERSATION)
        assert second.conversation("3")[-1] == {"role": "assistant", "content": "3"}
        assert data.missing == []  # your own data has no expected subsets


def test_parquet_with_a_conversation_column(tmp_path):
    import pyarrow as pa

    schema = pa.schema(
        [
            ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
            ("chosen", pa.string()),
            ("rejected", pa.string()),
        ]
    )
    path = write_parquet(tmp_path / "pairs.parquet", [pair(CONVERSATION[1:], "3", "4")], schema)
    assert load_dataset("pairwise", path).examples[0].prompt == tuple(CONVERSATION[1:])


def test_field_names_mapped(tmp_path):
    path = write_jsonl(tmp_path / "q.jsonl", [{"question": "q?", "good": "yes", "bad": "no", "task": "t", "uid": 7}])
    fields = {"prompt": "question", "chosen": "good", "rejected": "bad", "subset": "task", "id": "uid"}
    ex = load_dataset("pairwise", path, fields).examples[0]
    assert (ex.id, ex.group, ex.prompt, ex.chosen, ex.rejected) == ("7", "t", "q?", ("yes",), ("no",))
    with pytest.raises(DataError, match="missing key"):
        load_dataset("pairwise", path)  # without the mapping the file has no prompt


@pytest.mark.parametrize(
    ("prompt", "detail"),
    [
        ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}], "must end with a user turn"),
        ([{"role": "user", "content": "hi"}, {"role": "system", "content": "x"}], "role 'system'"),
        ([{"role": "bot", "content": "hi"}], "role 'bot'"),
        ([{"role": "user"}], "'role' and 'content'"),
        ([{"role": "user", "content": 3}], "content' must be a string"),
        ([{"role": "user", "content": "  "}], "prompt[0].content' is empty"),
        ([], "empty list"),
        (5, "string or a list of chat messages"),
    ],
)
def test_bad_conversation_is_one_clear_error(tmp_path, prompt, detail):
    path = write_jsonl(tmp_path / "bad.jsonl", [pair("fine", "a", "b"), pair(prompt, "a", "b", id="x")])
    with pytest.raises(DataError) as info:
        load_dataset("pairwise", path)
    assert str(path) in str(info.value) and "record 1 (id x)" in str(info.value) and detail in str(info.value)


# --- a run without servers ----------------------------------------------------------------------------------------


def test_longer_baseline_run_with_mapped_fields_rescores(tmp_path, capsys):
    records = [
        {"q": "a?", "pos": "long answer", "neg": "short", "kind": "x"},  # right
        {"q": CONVERSATION, "pos": "no", "neg": "yes!", "kind": "x"},  # wrong
        {"q": "c?", "pos": "same", "neg": "SAME", "kind": "y"},  # a tie: wrong
        {"q": "d?", "pos": "longer one", "neg": "short", "kind": "y"},  # right
        {"q": "e?", "pos": "longer one", "neg": "short", "kind": "y"},  # right
    ]
    path = write_jsonl(tmp_path / "prefs.jsonl", records)
    config = tmp_path / "config.yaml"
    config.write_text(
        f"benchmark: pairwise\nmodel: baseline:longer\ndata: {path}\nout: {tmp_path / 'r'}\n"
        "data_fields: {prompt: q, chosen: pos, rejected: neg, subset: kind}\n",
        encoding="utf-8",
    )
    summary = run(load_config(config), progress=False).summary
    assert summary["subsets"] == {"x": 0.5, "y": 2 / 3}
    assert summary["accuracy"] == 3 / 5 and summary["macro_accuracy"] == (0.5 + 2 / 3) / 2
    lines = (tmp_path / "r" / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {
        "benchmark": "pairwise",
        "id": "0",
        "subset": "x",
        "score_chosen": 11.0,
        "score_rejected": 5.0,
    }
    assert main(["score", str(tmp_path / "r" / "samples.jsonl"), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again == {k: summary[k] for k in again}


def test_compare_two_runs_by_subset_accuracy_and_macro(tmp_path):
    from rmbench_client.report.compare import render
    from rmbench_client.results.comparison import load_runs

    dirs = []
    for name, recs in (
        ("a", [ps("1", "x", 1, 0), ps("2", "y", 0, 1)]),
        ("b", [ps("1", "x", 1, 0), ps("2", "x", 1, 0)]),
    ):
        (tmp_path / name).mkdir()
        s = score("pairwise", recs, samples=10) | {"model": name}
        (tmp_path / name / "summary.json").write_text(json.dumps(s), encoding="utf-8")
        dirs.append(str(tmp_path / name))
    assert str(render(load_runs(dirs), "csv")).splitlines() == [
        "model,x,y,accuracy,macro,n,failed,complete",
        "a,100.00,0.00,50.00,50.00,,,unknown",  # summaries straight from scoring: no run facts
        "b,100.00,,100.00,100.00,,,unknown",
    ]


def test_no_data_given_says_where_to_put_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RMBENCH_DATA_DIR", raising=False)
    with pytest.raises(DataError, match="pairwise has no hub dataset: pass the data with --data"):
        load_dataset("pairwise", None)
    (tmp_path / "data" / "pairwise").mkdir(parents=True)
    write_jsonl(tmp_path / "data" / "pairwise" / "mine.jsonl", [pair("q", "a", "b")])
    assert len(load_dataset("pairwise", None).examples) == 1  # data/pairwise/ is read without --data
