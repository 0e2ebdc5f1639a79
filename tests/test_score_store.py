"""The durable score store: round trips, reopening, keys, and model epochs (which model a key belongs to)."""

from __future__ import annotations

import json
import sqlite3

import pytest

from rmbench_client.errors import ConfigError
from rmbench_client.run.score_store import STORE_FORMAT, ScoreStore, UnitKeys, key_prefix, unit_key

SERVED = {"id": "tiny-reward", "root": "/models/tiny/reward", "max_model_len": 4096}


def test_store_round_trip_and_reopen(tmp_path):
    path = tmp_path / "run" / "scores.sqlite"
    k1, k2, k3 = (unit_key("model-x", r) for r in ("r1", "r2", "r3"))
    store = ScoreStore(path)
    try:
        assert store.get_many([k1, k2]) == {}
        store.put_many({k1: [1.5, -2.0], k2: 0.25})
        assert store.get_many([k1, k2, k3, k1]) == {k1: [1.5, -2.0], k2: 0.25}
        assert store.count() == 2
    finally:
        store.close()
    store = ScoreStore(path)
    try:
        assert store.get_many([k1, k2, k3]) == {k1: [1.5, -2.0], k2: 0.25}
    finally:
        store.close()


def test_store_many_keys_and_no_nan(tmp_path):
    store = ScoreStore(tmp_path / "s.sqlite")
    try:
        items = {unit_key("m", str(i)): float(i) for i in range(1234)}  # past SQLite's parameter chunking
        store.put_many(items)
        assert store.get_many(items) == items
        with pytest.raises(ValueError):
            store.put_many({"k": float("nan")})
        assert store.get_many(["k"]) == {}
    finally:
        store.close()


def test_a_value_is_stored_as_the_text_json_dumps_writes(tmp_path):
    """What a reward head, a DPO role or a judge sends back is stored as json.dumps writes it, byte for byte (a
    float and a list of floats by a shorter path); a list holding a NaN or an infinity is refused like a bare one."""
    values = [
        0.1, -0.0, 1e-05, 1.5e300, -2.5, [0.1, -0.0, 1e-05, 123456789.0], [], [1, 2.5], [[0.5], [1.0, 2.0]],
        {"verdict": "A", "p": [0.25]}, "text", True, None, 3,
    ]  # fmt: skip
    path = tmp_path / "s.sqlite"
    store = ScoreStore(path)
    try:
        store.put_many({f"k{i}": v for i, v in enumerate(values)})
        for bad in ([0.5, float("nan")], [float("inf")], [[float("-inf")]]):
            with pytest.raises(ValueError):
                store.put_many({"bad": bad})
        assert store.get_many(f"k{i}" for i in range(len(values))) == {f"k{i}": v for i, v in enumerate(values)}
    finally:
        store.close()
    with sqlite3.connect(path) as db:
        stored = dict(db.execute("SELECT key, value FROM scores"))
    assert stored == {f"k{i}": json.dumps(v) for i, v in enumerate(values)}


def test_keys_depend_on_identity_and_material():
    prefix = key_prefix({"kind": "reward", "models": {"reward": {"epoch": "a"}}})
    assert prefix == key_prefix({"models": {"reward": {"epoch": "a"}}, "kind": "reward"})  # order-free
    other = key_prefix({"kind": "reward", "models": {"reward": {"epoch": "b"}}})
    assert len({unit_key(prefix, "text"), unit_key(other, "text"), unit_key(prefix, "text2")}) == 3


def test_model_epochs_tell_checkpoints_apart_by_fingerprint(tmp_path):
    path = tmp_path / "s.sqlite"
    store = ScoreStore(path)
    try:
        first = store.model_epoch("reward", SERVED, [1.25, -0.5])
        assert store.model_epoch("reward", SERVED, [1.25 + 1e-5, -0.5]) == first  # run-to-run noise: same model
        negated = store.model_epoch("reward", SERVED, [-1.25, 0.5])  # the same name and path, another checkpoint
        assert negated != first
        assert store.model_epoch("reward", SERVED, [-1.25, 0.5]) == negated
        # the same weights restarted with another max_model_len, or served from another path: the same epoch
        assert store.model_epoch("reward", SERVED | {"max_model_len": 2048}, [1.25, -0.5]) == first
        assert store.model_epoch("reward", SERVED | {"root": "/elsewhere"}, [1.25, -0.5]) == first
        assert store.model_epoch("policy", SERVED, [1.25, -0.5]) != first
        judge = store.model_epoch("judge", SERVED, None)  # no fingerprint: the identity alone
        assert store.model_epoch("judge", SERVED, None) == judge
        assert store.model_epoch("judge", SERVED | {"max_model_len": 2048}, None) != judge  # it caps answers
        # a judge on a vLLM release: a patch release is the same judge, another minor release is not
        on_32 = store.model_epoch("judge", SERVED | {"version": "0.32.0"}, None)
        assert store.model_epoch("judge", SERVED | {"version": "0.32.1"}, None) == on_32
        assert store.model_epoch("judge", SERVED | {"version": "0.32.2+cpu"}, None) == on_32
        assert store.model_epoch("judge", SERVED | {"version": "0.33.0"}, None) != on_32
    finally:
        store.close()
    store = ScoreStore(path)
    try:
        assert store.model_epoch("reward", SERVED, [1.25, -0.5]) == first  # remembered across runs
    finally:
        store.close()


def test_a_store_reads_only_keys_it_holds_and_never_mistakes_one_key_for_another(tmp_path):
    """Lookups of keys the store does not hold read nothing from SQLite; what was put is read back exactly, and a
    key whose hash matches a stored one (a collision, simulated) is not stored, not the other key's value. Reopened,
    the store finds its rows again; rows another process adds are found once the store is told others write."""
    k1, k2, k3 = (unit_key("m", r) for r in ("r1", "r2", "r3"))
    path = tmp_path / "s.sqlite"
    store = ScoreStore(path)
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    try:
        assert store.get_many([k1, k2]) == {}
        assert not [s for s in statements if s.startswith("SELECT")]
        store.put_many({k1: 1.5})
        store.put_many({k1: 2.5, k2: 0.5})  # a key put again keeps one row, with the new value
        assert store.get_many([k1, k2]) == {k1: 2.5, k2: 0.5}
        assert store.count() == 2
        store._index[hash(k3)] = store._index[hash(k1)]  # as if k3 shared k1's hash
        assert store.get_many([k3]) == {}
    finally:
        store.close()
    store = ScoreStore(path)
    other = ScoreStore(path)  # another process writing to the same store (a run's worker)
    try:
        assert store.get_many([k1, k2]) == {k1: 2.5, k2: 0.5}
        other.put_many({k3: -1.0})
        assert store.get_many([k3]) == {}  # unseen until told
        store.others_write()
        assert store.get_many([k1, k3]) == {k1: 2.5, k3: -1.0}
        store.put_many({k3: -2.0})  # one row per key, whoever wrote it first: its row gets the new value
        assert other.get_many([k3]) == {k3: -2.0}
        assert store.count() == 3
    finally:
        store.close()
        other.close()


def test_rows_added_after_another_process_held_rows_apart_are_found_with_one_row_per_key(tmp_path):
    """Two workers of a run: one holds apart the last row written (its end-of-run recheck), SQLite gives that rowid
    to the next row the other adds; the writer still finds its value, puts it again on the same row, and a third
    process caught up before the move finds it too."""
    path = tmp_path / "scores.sqlite"
    bad = ({"role": "reward", "url": "http://127.0.0.1:1", "release": "0.32.0"},)
    good = ({"role": "reward", "url": "http://127.0.0.1:2", "release": "0.32.0"},)
    a, b, run = ScoreStore(path), ScoreStore(path), ScoreStore(path)
    try:
        run.others_write()
        since = a.mark()
        b.put_many({"k1": 1.0}, good)
        b.put_many({"k2": 2.0}, bad)
        assert run.get_many(["k1", "k2"]) == {"k1": 1.0, "k2": 2.0}
        assert a.hold_apart("http://127.0.0.1:1", since, "it changed") == 1
        b.put_many({"k3": 3.0}, good)  # the rowid k2 had
        assert b.get_many(["k3"]) == {"k3": 3.0}
        assert run.get_many(["k1", "k2", "k3"]) == {"k1": 1.0, "k3": 3.0}
        b.put_many({"k3": 3.5}, good)
        assert b.count() == 2 and run.get_many(["k3"]) == {"k3": 3.5}
    finally:
        for store in (a, b, run):
            store.close()


def test_a_store_of_the_older_layout_reads_and_writes_as_before(tmp_path):
    """A store whose table has the key as its primary key (written before the log layout) is read, resumed and
    written with one row per key."""
    path = tmp_path / "scores.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE scores (key TEXT PRIMARY KEY, value TEXT NOT NULL, source INTEGER)")
    db.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("INSERT INTO meta VALUES ('format', ?)", (STORE_FORMAT,))
    db.execute("INSERT INTO scores VALUES ('a', '1.0', NULL)")
    db.commit()
    db.close()
    store = ScoreStore(path)
    try:
        assert store.get_many(["a", "b"]) == {"a": 1.0}
        store.put_many({"a": 3.0, "b": 4.0})
        assert store.get_many(["a", "b"]) == {"a": 3.0, "b": 4.0} and store.count() == 2
    finally:
        store.close()
    looked = ScoreStore(path, read_only=True)
    try:
        assert looked.get_many(["b", "a"]) == {"a": 3.0, "b": 4.0}
    finally:
        looked.close()


def test_keys_cover_the_epoch_not_the_served_identity_and_one_role_for_a_role_unit():
    def identity(served: dict, mode_ref: bool, ref_epoch: str = "r") -> dict:
        models = {"policy": {"served": served, "epoch": "p"}} | (
            {"reference": {"served": served, "epoch": ref_epoch}} if mode_ref else {}
        )
        paths = {"policy": "/v1/completions"} | ({"reference": "/v1/completions"} if mode_ref else {})
        return {"kind": "dpo", "with_reference": mode_ref, "models": models, "logprobs_path": paths}

    ratio, avg = UnitKeys(identity(SERVED, True)), UnitKeys(identity(SERVED | {"max_model_len": 1}, False))
    assert ratio.of("text", "policy") == avg.of("text", "policy")  # another mode, another max_model_len
    assert ratio.of("text", "reference") != ratio.of("text", "policy")
    assert ratio.of("text", "reference") != UnitKeys(identity(SERVED, True, "r2")).of("text", "reference")
    assert ratio.of("text", None) != avg.of("text", None)  # a whole-run unit covers every role


def test_a_store_of_the_older_key_format_is_refused_in_one_line(tmp_path):
    path = tmp_path / "scores.sqlite"
    db = sqlite3.connect(path)  # format 1: scores and models tables, no meta
    db.execute("CREATE TABLE scores (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("INSERT INTO scores VALUES ('k', '1.0')")
    db.commit()
    db.close()
    for read_only in (False, True):
        with pytest.raises(ConfigError, match=r"score store .*scores.sqlite .*key format 1.*--fresh"):
            ScoreStore(path, read_only=read_only)
    new = tmp_path / "new.sqlite"
    ScoreStore(new).close()
    ScoreStore(new, read_only=True).close()  # a store this code wrote opens again


def test_a_store_written_before_provenance_stays_readable_and_gains_it(tmp_path):
    """A store of this key format written before answers were attributed (no `source` column) reads as it was, read
    only too; opened for writing it gains the column (its rows: unknown answerer), and new rows name theirs."""
    path = tmp_path / "scores.sqlite"
    db = sqlite3.connect(path)  # the schema of the release before provenance
    db.execute("CREATE TABLE scores (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("CREATE TABLE models (epoch TEXT PRIMARY KEY, role TEXT, served TEXT, fingerprint TEXT)")
    db.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("INSERT INTO meta VALUES ('format', ?)", (STORE_FORMAT,))
    db.execute("INSERT INTO scores VALUES ('old', '[1.5, -2.0]')")
    db.commit()
    db.close()
    looked = ScoreStore(path, read_only=True)
    try:
        assert looked.get_many(["old"]) == {"old": [1.5, -2.0]}
    finally:
        looked.close()
    answered = ({"role": "reward", "url": "http://127.0.0.1:1", "release": "0.32.0"},)
    store = ScoreStore(path)
    try:
        sources: dict[str, int | None] = {}
        assert store.get_many(["old"], sources) == {"old": [1.5, -2.0]} and sources == {"old": None}
        assert store.records(sources.values()) == []  # nothing is said of who answered before
        since = store.mark()
        store.put_many({"new": 0.5}, answered)
        assert store.get_many(["new"], sources) == {"new": 0.5}
        assert store.records([sources["new"]]) == [answered]
        assert store.hold_apart("http://127.0.0.1:1", since, "it changed") == 1  # the old row is not its
        assert store.get_many(["old", "new"]) == {"old": [1.5, -2.0]}
    finally:
        store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT key, value, why FROM held_apart").fetchall() == [("new", "0.5", "it changed")]


def test_a_store_whose_path_holds_uri_characters_is_looked_at_where_it_is(tmp_path):
    """A run directory named with '#', '?' or '%' (`--out runs/model#2`): the read-only look (`run --dry-run`)
    opens that very store, never a file of the path cut at the character."""
    for name in ("model#2", "what?x", "p%41"):
        path = tmp_path / name / "scores.sqlite"
        store = ScoreStore(path)
        store.put_many({"k": 1.5})
        store.close()
        looked = ScoreStore(path, read_only=True)
        try:
            assert looked.get_many(["k"]) == {"k": 1.5}
        finally:
            looked.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model#2", "p%41", "what?x"]
