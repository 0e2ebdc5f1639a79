"""Loading RM-Bench and RewardBench files, and one clear DataError (file + record) for every bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers_data import require_rmbench

from rmbench_client.benchmarks.reward_bench import constants as rb_c
from rmbench_client.cli import main
from rmbench_client.datasets import load_dataset
from rmbench_client.errors import DataError


def rm_record(rid: Any, **fields: Any) -> dict[str, Any]:
    rec = {"id": rid, "prompt": f"prompt {rid}", "chosen": ["c0", "c1", "c2"], "rejected": ["r0", "r1", "r2"]}
    return rec | fields


def rb_record(rid: Any, subset: str = "alpacaeval-easy", **fields: Any) -> dict[str, Any]:
    rec = {
        "prompt": f"prompt {rid}",
        "chosen": f"good answer {rid}",
        "chosen_model": "gpt-4",
        "rejected": f"bad answer {rid}",
        "rejected_model": "llama",
        "subset": subset,
        "id": rid,
    }
    return rec | fields


def write_json(path: Path, records: Any) -> Path:
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def load_error(benchmark: str, path: Path) -> str:
    with pytest.raises(DataError) as info:
        load_dataset(benchmark, path)
    return str(info.value)


# --- the real RM-Bench files -------------------------------------------------------------------------------------


def test_real_rmbench_files():
    data = load_dataset("rm-bench", require_rmbench())
    counts = Counter(ex.subgroup for ex in data.examples)
    assert counts == {"chat": 129, "code": 228, "safety-refuse": 284, "safety-response": 157}
    assert Counter(ex.group for ex in data.examples) == {"chat": 129, "code": 228, "safety": 284 + 157}
    ids = {ex.id for ex in data.examples}
    assert len(ids) == 798
    assert {"chat/8", "code/8", "safety-refuse/2952", "safety-response/3155"} <= ids
    assert data.missing == ["math"]  # reported, not fatal
    assert len(data.sources) == 4
    for ex in data.examples:
        assert ex.benchmark == "rm-bench"
        assert len(ex.chosen) == 3 and len(ex.rejected) == 3
        assert all(isinstance(t, str) and t.strip() for t in ex.chosen + ex.rejected)


def test_single_real_file():
    data = load_dataset("rm-bench", require_rmbench() / "safety-response_filtered.json")
    assert len(data.examples) == 157
    assert {ex.group for ex in data.examples} == {"safety"}
    assert data.missing == ["chat", "math", "code"]


# --- synthetic RM-Bench ------------------------------------------------------------------------------------------


def test_total_dataset_format(tmp_path):
    recs = [
        rm_record("chat/1", domain="chat"),
        rm_record("math/2", domain="math"),
        rm_record("code/3", domain="code"),
        rm_record("safety-refuse/4", domain="safety-refuse"),
        rm_record("safety-response/5", domain="safety-response"),
    ]
    write_json(tmp_path / "total_dataset.json", recs)
    write_json(tmp_path / "chat_filtered.json", [rm_record(99)])  # ignored: total_dataset.json wins
    data = load_dataset("rm-bench", tmp_path)
    assert [ex.id for ex in data.examples] == [r["id"] for r in recs]
    assert [ex.group for ex in data.examples] == ["chat", "math", "code", "safety", "safety"]
    assert [ex.subgroup for ex in data.examples][3:] == ["safety-refuse", "safety-response"]
    assert data.missing == []
    assert data.sources == [tmp_path / "total_dataset.json"]
    assert data.examples[0].chosen == ("c0", "c1", "c2") and data.examples[0].rejected == ("r0", "r1", "r2")


def test_domain_from_file_name(tmp_path):
    write_json(tmp_path / "safety-refuse_filtered.json", [rm_record(7)])
    write_json(tmp_path / "math_filtered.json", [rm_record(7)])
    data = load_dataset("rm-bench", tmp_path)
    assert sorted(ex.id for ex in data.examples) == ["math/7", "safety-refuse/7"]
    assert data.missing == ["chat", "code"]


RM_BAD_RECORDS = [
    ("missing prompt", {k: v for k, v in rm_record(5).items() if k != "prompt"}, "prompt"),
    ("missing chosen", {k: v for k, v in rm_record(5).items() if k != "chosen"}, "chosen"),
    ("missing rejected", {k: v for k, v in rm_record(5).items() if k != "rejected"}, "rejected"),
    ("two chosen", rm_record(5, chosen=["a", "b"]), "chosen"),
    ("four rejected", rm_record(5, rejected=["a", "b", "c", "d"]), "rejected"),
    ("chosen is a string", rm_record(5, chosen="abc"), "chosen"),
    ("empty response", rm_record(5, rejected=["a", "", "c"]), "rejected[1]"),
    ("blank response", rm_record(5, chosen=["a", "b", "  \n"]), "chosen[2]"),
    ("integer response", rm_record(5, chosen=[1, "b", "c"]), "chosen[0]"),
    ("null response", rm_record(5, rejected=["a", "b", None]), "rejected[2]"),
    ("empty prompt", rm_record(5, prompt=""), "prompt"),
    ("unknown domain", rm_record(5, domain="physics"), "physics"),
    ("unknown id prefix", rm_record("physics/5"), "physics"),
]


@pytest.mark.parametrize(("case", "record", "detail"), RM_BAD_RECORDS, ids=[c[0] for c in RM_BAD_RECORDS])
def test_rmbench_bad_record(tmp_path, case, record, detail):
    path = write_json(tmp_path / "chat_filtered.json", [rm_record(1), record])
    msg = load_error("rm-bench", path)
    assert str(path) in msg
    assert "record 1" in msg and "id " in msg  # index and id of the bad record
    assert detail in msg


def test_rmbench_record_not_an_object(tmp_path):
    path = write_json(tmp_path / "chat_filtered.json", [rm_record(1), ["not", "a", "record"]])
    msg = load_error("rm-bench", path)
    assert str(path) in msg and "record 1" in msg


def test_rmbench_no_domain(tmp_path):
    path = write_json(tmp_path / "mine.json", [rm_record(3)])
    msg = load_error("rm-bench", path)
    assert str(path) in msg and "record 0" in msg and "domain" in msg


def test_rmbench_duplicate_id_within_file(tmp_path):
    path = write_json(tmp_path / "chat_filtered.json", [rm_record(5), rm_record(6), rm_record(5, prompt="other")])
    msg = load_error("rm-bench", path)
    assert str(path) in msg and "chat/5" in msg and "duplicate" in msg


def test_rmbench_duplicate_id_across_files(tmp_path):
    write_json(tmp_path / "chat_filtered.json", [rm_record(1), rm_record("code/4")])
    second = write_json(tmp_path / "code_filtered.json", [rm_record(4)])
    msg = load_error("rm-bench", tmp_path)
    assert str(second) in msg and "code/4" in msg and str(tmp_path / "chat_filtered.json") in msg


def test_rmbench_not_valid_json(tmp_path):
    path = tmp_path / "chat_filtered.json"
    path.write_text('[\n  {"id": 1, "prompt": "p",\n  oops\n]', encoding="utf-8")
    msg = load_error("rm-bench", path)
    assert str(path) in msg and "line 3, column 3: not valid JSON" in msg


def test_rmbench_not_utf8(tmp_path):
    path = tmp_path / "chat_filtered.json"
    good = json.dumps([rm_record(1)]).encode()
    path.write_bytes(good[:10] + b"\xff\xfe" + good[10:])
    msg = load_error("rm-bench", path)
    assert str(path) in msg and "UTF-8" in msg and "line 1, offset 10" in msg


def test_rmbench_empty_directory(tmp_path):
    msg = load_error("rm-bench", tmp_path)
    assert str(tmp_path) in msg


def test_missing_path(tmp_path):
    msg = load_error("rm-bench", tmp_path / "nope.json")
    assert str(tmp_path / "nope.json") in msg


# --- RewardBench -------------------------------------------------------------------------------------------------

RB_RECORDS = [
    rb_record(0, "alpacaeval-easy"),
    rb_record(1, "mt-bench-hard"),
    rb_record(2, "xstest-should-respond"),
    rb_record(3, "math-prm"),
    rb_record(4, "hep-rust"),
    rb_record(5, "anthropic_hhh"),
]


def write_parquet(path: Path, records: list[dict[str, Any]]) -> Path:
    pq.write_table(pa.Table.from_pylist(records), path)
    return path


@pytest.mark.parametrize("fmt", ["json", "jsonl", "parquet", "json-lines-in-.json"])
def test_rewardbench_formats(tmp_path, fmt):
    if fmt == "json":
        path = write_json(tmp_path / "rb.json", RB_RECORDS)
    elif fmt == "jsonl":
        path = write_jsonl(tmp_path / "rb.jsonl", RB_RECORDS)
    elif fmt == "parquet":
        path = write_parquet(tmp_path / "filtered-00000.parquet", RB_RECORDS)
    else:
        path = write_jsonl(tmp_path / "rb.json", RB_RECORDS)
    data = load_dataset("reward-bench", path)
    assert data.benchmark == "reward-bench"
    present = {r["subset"] for r in RB_RECORDS}
    core = [s for subsets in rb_c.SECTIONS.values() for s in subsets]
    assert data.missing == [s for s in core if s not in present]  # a run on this file is partial
    assert [ex.id for ex in data.examples] == ["0", "1", "2", "3", "4", "anthropic_hhh/5"]  # prior sets: split/id
    assert [ex.group for ex in data.examples] == [r["subset"] for r in RB_RECORDS]
    assert [ex.subgroup for ex in data.examples] == [
        "Chat",
        "Chat Hard",
        "Safety",
        "Reasoning",
        "Reasoning",
        "Prior Sets",
    ]
    first = data.examples[0]
    assert first.prompt == "prompt 0" and first.chosen == ("good answer 0",) and first.rejected == ("bad answer 0",)


def test_rewardbench_directory_of_files(tmp_path):
    write_parquet(tmp_path / "filtered.parquet", RB_RECORDS[:3])
    write_jsonl(tmp_path / "prior.jsonl", RB_RECORDS[3:])
    (tmp_path / "notes.txt").write_text("ignored", encoding="utf-8")
    data = load_dataset("reward-bench", tmp_path)
    assert sorted(ex.id for ex in data.examples) == ["0", "1", "2", "3", "4", "anthropic_hhh/5"]


def _without(key: str) -> dict[str, Any]:
    return {k: v for k, v in rb_record(9).items() if k != key}


RB_BAD_RECORDS = [
    ("missing prompt", _without("prompt"), "prompt"),
    ("missing chosen", _without("chosen"), "chosen"),
    ("missing rejected", _without("rejected"), "rejected"),
    ("missing subset", _without("subset"), "subset"),
    ("unknown subset", rb_record(9, "alpacaeval-medium"), "alpacaeval-medium"),
    ("empty chosen", rb_record(9, chosen=""), "chosen"),
    ("blank rejected", rb_record(9, rejected="   "), "rejected"),
    ("list chosen", rb_record(9, chosen=["a"]), "chosen"),
    ("integer rejected", rb_record(9, rejected=3), "rejected"),
    ("null prompt", rb_record(9, prompt=None), "prompt"),
]


@pytest.mark.parametrize(("case", "record", "detail"), RB_BAD_RECORDS, ids=[c[0] for c in RB_BAD_RECORDS])
@pytest.mark.parametrize("suffix", ["json", "jsonl"])
def test_rewardbench_bad_record(tmp_path, case, record, detail, suffix):
    writer = write_json if suffix == "json" else write_jsonl
    path = writer(tmp_path / f"rb.{suffix}", [rb_record(0), record])
    msg = load_error("reward-bench", path)
    assert str(path) in msg and "record 1" in msg and "id 9" in msg and detail in msg


def test_rewardbench_bad_record_missing_id(tmp_path):
    path = write_json(tmp_path / "rb.json", [rb_record(0), _without("id")])
    msg = load_error("reward-bench", path)
    assert str(path) in msg and "record 1" in msg and "id" in msg


def test_rewardbench_bad_record_in_parquet(tmp_path):
    path = write_parquet(tmp_path / "rb.parquet", [rb_record(0), rb_record(1, "no-such-subset")])
    msg = load_error("reward-bench", path)
    assert str(path) in msg and "record 1" in msg and "no-such-subset" in msg


def test_rewardbench_duplicate_id_within_file(tmp_path):
    path = write_jsonl(tmp_path / "rb.jsonl", [rb_record(0), rb_record(1), rb_record(1, "hep-go")])
    msg = load_error("reward-bench", path)
    assert str(path) in msg and "'1'" in msg and "duplicate" in msg


def test_rewardbench_duplicate_id_across_files(tmp_path):
    first = write_json(tmp_path / "a.json", [rb_record(0), rb_record(1)])
    second = write_jsonl(tmp_path / "b.jsonl", [rb_record(2), rb_record(1, "hep-go")])
    msg = load_error("reward-bench", tmp_path)
    assert str(second) in msg and str(first) in msg and "'1'" in msg


def test_rewardbench_bad_jsonl_line(tmp_path):
    path = tmp_path / "rb.jsonl"
    path.write_text(json.dumps(rb_record(0)) + "\n" + '{"id": 1, "prompt": \n', encoding="utf-8")
    msg = load_error("reward-bench", path)
    assert str(path) in msg and "line 2, column 21: not valid JSON" in msg


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_byte_order_mark_at_the_start_is_accepted(tmp_path, suffix):
    """Windows editors often start a UTF-8 file with a byte order mark: the records read as without it; the mark
    elsewhere is no JSON, as Python's own reader says."""
    records = [rb_record(0), rb_record(1, "hep-go")]
    path = tmp_path / f"rb{suffix}"
    text = "".join(json.dumps(r) + "\n" for r in records) if suffix == ".jsonl" else json.dumps(records)
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert [ex.id for ex in load_dataset("reward-bench", path).examples] == ["0", "1"]
    if suffix == ".jsonl":
        path.write_bytes(text.encode("utf-8") + b"\xef\xbb\xbf" + text.splitlines()[0].encode("utf-8"))
        assert "line 3, column 1: not valid JSON" in load_error("reward-bench", path)


def test_rewardbench_not_utf8(tmp_path):
    path = tmp_path / "rb.jsonl"
    path.write_bytes(json.dumps(rb_record(0)).encode() + b"\n" + b'{"id": 1, "prompt": "caf\xe9"}\n')
    msg = load_error("reward-bench", path)
    assert str(path) in msg and "UTF-8" in msg and "line 2" in msg  # line 2 of a JSONL file: record 1


def test_rewardbench_not_parquet(tmp_path):
    path = tmp_path / "rb.parquet"
    path.write_bytes(b"this is not parquet")
    msg = load_error("reward-bench", path)
    assert str(path) in msg and "parquet" in msg


def test_json_scalar_is_not_a_record_list(tmp_path):
    path = write_json(tmp_path / "rb.json", 42)
    msg = load_error("reward-bench", path)
    assert str(path) in msg and "list of records" in msg


# --- CLI: one line on stderr, exit code 2 ------------------------------------------------------------------------


def _bad_files(tmp_path: Path) -> dict[str, Path]:
    bad_json = tmp_path / "chat_filtered.json"
    bad_json.write_text('[{"id": 1,', encoding="utf-8")
    bad_record = write_json(tmp_path / "code_filtered.json", [rm_record(1), rm_record(2, chosen=["a", "b"])])
    return {"bad-json": bad_json, "bad-record": bad_record, "missing": tmp_path / "absent.json"}


@pytest.mark.parametrize("kind", ["bad-json", "bad-record", "missing"])
def test_cli_run_bad_data_is_one_line(tmp_path, capsys, kind):
    bad = _bad_files(tmp_path)[kind]
    out = tmp_path / "out"
    code = main(["run", "--model", "baseline:longer", "--data", str(bad), "--out", str(out), "--no-progress"])
    captured = capsys.readouterr()
    assert code == 2
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("error:") and str(bad) in lines[0]
    assert "Traceback" not in captured.err + captured.out


def test_cli_run_bad_data_subprocess(tmp_path):
    exe = Path(sys.executable).with_name("rmbench-client")
    if not exe.exists():
        pytest.skip(f"console script not installed next to {sys.executable}")
    bad = _bad_files(tmp_path)["bad-record"]
    proc = subprocess.run(
        [str(exe), "run", "--model", "baseline:longer", "--data", str(bad), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error:") and str(bad) in lines[0] and "record 1" in lines[0]
    assert "Traceback" not in proc.stderr


def test_jsonl_texts_with_unicode_line_separators_stay_one_record(tmp_path):
    """JSON lines split at newlines only: U+2028 / U+2029 / U+0085 written raw inside a text are part of it."""
    records = [rb_record(0), rb_record(1)]
    records[0]["chosen"] = "first\u2028second\u2029third\x85end"
    path = tmp_path / "rb.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    examples = load_dataset("reward-bench", path).examples
    assert [ex.id for ex in examples] == ["0", "1"] and examples[0].chosen == ("first\u2028second\u2029third\x85end",)


def test_read_records_of_jsonl_keep_unicode_line_separators(tmp_path):
    """The whole-file reader (score files, samples.jsonl) splits JSON lines at newlines only, as the loader does."""
    from rmbench_client.benchmarks.shared.records import read_records

    path = tmp_path / "samples.jsonl"
    path.write_text('{"t": "a\u2028b"}\r\n\n{"t": "c\x85d"}\n', encoding="utf-8")
    assert read_records(path) == [{"t": "a\u2028b"}, {"t": "c\x85d"}]
