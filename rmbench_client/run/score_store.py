"""Durable score store: SQLite in WAL mode, every request's results committed as they arrive.

A key hashes everything that determines a raw value (`unit_key`): the model kind's identity (kind, backend,
template digest, options, and per role the model epoch) and the unit's material (the exact text, token ids or
messages sent). A rerun sends only what is missing; a changed model, template or input never reuses a score.
Model epochs (table `models`) tell checkpoints apart that the server names alike: see `backends.identity`. A model's
epoch is its probe fingerprint (the served name, path and max_model_len are not part of a key: the same weights
restarted with another max_model_len keep their scores); a unit of one role (DPO's policy or reference log-probs)
is keyed by that role's identity alone, so another DPO mode reuses what the roles it shares have stored.

The table is an append-only log without an index on the key: a content-hash key lands on a random page of such an
index, and writing that page per row was most of the store's CPU (docs/performance.md). The store keeps its own
index in memory instead: the hash of each key it has read or written -> that row's rowid, brought up to date by
reading the rows added since (`rowid` > the last seen) — at open, inside every write's transaction, and before a
lookup once other processes write (a run's workers); from the whole table again once rows were moved out of it
(`hold_apart`: SQLite gives the rowids of the last rows moved to the next rows added). A value is read by rowid and
returned only when the row's key is the key asked for, so a hash collision or a stale rowid means "not stored"
(scored again), never a wrong value.
A store written with the key as the table's primary key (before this layout) is read and written the same way.

Each row also records which endpoints answered it (`source`: a row of table `sources`, the answerers as a sample
line lists them, pool/provenance.py); a store written before that has no such column and is given it when opened for
writing (its old rows: unknown). Answers found to come from a server that changed (`hold_apart`) move to table
`held_apart`, with why: never read again as scores, kept to be looked at.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from ..backends.identity import fingerprints_match, judge_identity
from ..errors import ConfigError, StorageError
from ..pool.provenance import Record, encoded, named

# The key format this code writes (table `meta`). Format 1 (no `meta` table) keyed on the served identity: its keys
# are never found by this code, so such a store is refused rather than silently scored again beside itself.
STORE_FORMAT = "2"
ROLE_KEYED = ("models", "logprobs_path")  # identity entries that map a role to what concerns that role only
WHOLE_RUN_ONLY = ("with_reference",)  # identity entries that describe the combination, not one role's values
# a key put again: its row (by rowid, and only if that row holds this key) takes the new value and answerers
UPDATE_ROW = "UPDATE scores SET value = ?, source = ? WHERE rowid = ? AND key = ?"


def key_identity(identity: dict[str, Any], role: str | None = None) -> dict[str, Any]:
    """What a store key covers: the identity with each model named by its epoch alone, and for a unit of one role
    (`Unit.role`) only that role's entries."""
    models = {r: {"epoch": m["epoch"]} for r, m in identity.get("models", {}).items()}
    out = identity | ({"models": models} if models else {})
    if role is None:
        return out
    out = {k: v for k, v in out.items() if k not in WHOLE_RUN_ONLY}
    return out | {k: {role: out[k].get(role)} for k in ROLE_KEYED if k in out} | {"role": role}


class UnitKeys:
    """The store keys of units under one identity (with epochs), a prefix per role computed once."""

    def __init__(self, identity: dict[str, Any] | None) -> None:
        self.identity = identity
        self._prefixes: dict[str | None, str] = {}

    def prefix(self, role: str | None) -> str:
        if role not in self._prefixes:
            self._prefixes[role] = key_prefix(key_identity(self.identity or {}, role))
        return self._prefixes[role]

    def of(self, material: str, role: str | None) -> str:
        return unit_key(self.prefix(role), material)


def key_prefix(identity: dict[str, Any]) -> str:
    """The hash of a model kind's identity (fingerprints already replaced by epochs)."""
    blob = json.dumps(identity, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def unit_key(prefix: str, material: str) -> str:
    """Stable key of one scored unit."""
    return hashlib.sha256(f"{prefix}\0{material}".encode()).hexdigest()


class ScoreStore:
    """Append-only key -> value store; a `kill -9` loses at most the results not yet returned."""

    def __init__(self, path: Path, read_only: bool = False) -> None:
        self.path = path
        try:
            with self._reporting():
                self._open(path, read_only)
        except StorageError:
            if hasattr(self, "_db"):
                self._db.close()
            raise

    @contextlib.contextmanager
    def _reporting(self) -> Iterator[None]:
        """SQLite's errors ("database or disk is full", "attempt to write a readonly database", "disk I/O error")
        as a StorageError naming the run directory and the store, with the free space when the disk is full."""
        try:
            yield
        except (sqlite3.Error, OSError) as exc:
            raise StorageError.of(self.path.parent, self.path.name, exc) from None

    def _open(self, path: Path, read_only: bool) -> None:
        self._index: dict[int, int] = {}  # hash(key) -> rowid of the latest row with a key of that hash
        self._seen = 0  # the largest rowid read into the index
        self._moves = 0  # how many times rows were moved out of the table (`hold_apart`), as the index last saw
        self._others = False  # other processes write too: catch up before every lookup
        self._sources: dict[str, int] = {}  # answerers' text -> id, as this process met them
        self._records: dict[int, Record] = {}
        if read_only:  # a look at an existing store (`run --dry-run`, `status`): nothing is created or written
            self._db = _look(path)
            self._check_format(path)
            self._source_column = self._source()
            self._catch_up()
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        # made here when new, as every file of the run directory is made, with the user's umask (SQLite would make
        # it 0644 less the umask; its log and shared-memory files take the store's mode)
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o666))
        # autocommit mode: every put is its own durable transaction.
        self._db = sqlite3.connect(path, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL survives a killed process
        # no key index (the module's docstring); an older store keeps its `key TEXT PRIMARY KEY`
        self._db.execute("CREATE TABLE IF NOT EXISTS scores (key TEXT NOT NULL, value TEXT NOT NULL, source INTEGER)")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS models (epoch TEXT PRIMARY KEY, role TEXT, served TEXT, fingerprint TEXT)"
        )
        if self._db.execute("SELECT 1 FROM scores LIMIT 1").fetchone() is None:
            self._db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
            self._db.execute("INSERT OR IGNORE INTO meta (name, value) VALUES ('format', ?)", (STORE_FORMAT,))
        self._check_format(path)
        self._migrate()
        self._source_column = "source"
        self._catch_up()

    def _catch_up(self) -> None:
        """The rows added since the index was last brought up to date, into it; the whole table again when rows
        were moved out of it since (by this process or another: a worker's `hold_apart`), as SQLite then gives the
        rowids of the last rows moved to the next rows added, which `rowid` > the last seen would never read."""
        row = self._db.execute("SELECT value FROM meta WHERE name = 'moves'").fetchone()
        if (moves := int(row[0]) if row else 0) != self._moves:
            self._index.clear()
            self._seen, self._moves = 0, moves
        rows = self._db.execute("SELECT rowid, key FROM scores WHERE rowid > ? ORDER BY rowid", (self._seen,))
        for rowid, key in rows:
            self._index[hash(key)] = rowid
            self._seen = rowid

    def _columns(self) -> set[str]:
        return {row[1] for row in self._db.execute("PRAGMA table_info(scores)")}

    def _source(self) -> str:
        """The column naming a row's answerers; NULL in a store written before it, looked at read only."""
        return "source" if "source" in self._columns() else "NULL"

    def _migrate(self) -> None:
        """Provenance: a `source` per row, the `sources` it names, the rows held apart (added to older stores)."""
        columns = self._columns()
        with self._db:
            self._db.execute("BEGIN")
            if "source" not in columns:
                self._db.execute("ALTER TABLE scores ADD COLUMN source INTEGER")
            self._db.execute("CREATE TABLE IF NOT EXISTS sources (id INTEGER PRIMARY KEY, answered TEXT UNIQUE)")
            self._db.execute("CREATE TABLE IF NOT EXISTS held_apart (key TEXT, value TEXT, source INTEGER, why TEXT)")

    def _check_format(self, path: Path) -> None:
        """ConfigError for a store whose keys this code would never find (written by an older rmbench-client)."""
        tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        found = "1"
        if "meta" in tables:
            row = self._db.execute("SELECT value FROM meta WHERE name = 'format'").fetchone()
            found = row[0] if row else "1"
        elif "scores" not in tables:
            return  # nothing in it yet
        if found != STORE_FORMAT:
            self._db.close()
            raise ConfigError(
                f"score store {path} was written by another rmbench-client (key format {found}, this one reads "
                f"{STORE_FORMAT}): give this run another --out, or --fresh to score again in place"
            )

    def get_many(self, keys: Iterable[str], sources: dict[str, int | None] | None = None) -> dict[str, Any]:
        """The stored values of `keys` (those stored); with `sources`, each found key's source id goes there."""
        with self._reporting():
            return self._get_many(keys, sources)

    def _get_many(self, keys: Iterable[str], sources: dict[str, int | None] | None) -> dict[str, Any]:
        if self._others:
            self._catch_up()
        wanted: dict[int, str] = {}  # rowid -> the key asked for
        for k in keys:
            if (rowid := self._index.get(hash(k))) is not None:
                wanted[rowid] = k
        out: dict[str, Any] = {}
        rowids = list(wanted)
        for i in range(0, len(rowids), 500):  # stay under SQLite's host-parameter limit
            chunk = rowids[i : i + 500]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT rowid, key, value, {self._source_column} FROM scores WHERE rowid IN ({marks})"
            for rowid, key, value, source in self._db.execute(query, chunk):
                if wanted[rowid] != key:  # another key of the same hash: not stored
                    continue
                out[key] = json.loads(value)
                if sources is not None:
                    sources[key] = source
        return out

    def put_many(self, items: dict[str, Any], answered: Record | Mapping[str, Record] = ()) -> None:
        """Store the values of one request (or prompt), with what answered them (the same for all, or per key): one
        transaction, one row per key (a key already stored has its row's value replaced)."""
        with self._reporting():
            each = answered if isinstance(answered, Mapping) else dict.fromkeys(items, answered)
            source = {k: self._source_id(each[k]) if each.get(k) else None for k in items}
        rows = [(k, _value_text(v), source[k]) for k, v in items.items()]
        with self._reporting(), self._db:
            self._db.execute("BEGIN IMMEDIATE")  # the write lock first: no other process adds a row meanwhile
            self._catch_up()
            new = []
            for row in rows:
                rowid = self._index.get(hash(row[0]))
                if rowid is None or not self._db.execute(UPDATE_ROW, (row[1], row[2], rowid, row[0])).rowcount:
                    new.append(row)
            # OR REPLACE: a store keyed by its primary key (the older layout) may hold a key of a colliding hash
            self._db.executemany("INSERT OR REPLACE INTO scores (key, value, source) VALUES (?, ?, ?)", new)
            self._catch_up()  # the rowids just written

    def _source_id(self, answered: Record) -> int:
        text = encoded(answered)
        if (found := self._sources.get(text)) is None:
            with self._db:
                self._db.execute("BEGIN")
                self._db.execute("INSERT OR IGNORE INTO sources (answered) VALUES (?)", (text,))
                found = int(self._db.execute("SELECT id FROM sources WHERE answered = ?", (text,)).fetchone()[0])
            self._sources[text] = found
            self._records[found] = answered
        return found

    def record(self, source: int | None) -> Record:
        """What answered the row of source id `source` (nothing for one stored before answers were attributed)."""
        found = self.records([source])
        return found[0] if found else ()

    def records(self, ids: Iterable[int | None]) -> list[Record]:
        """What answered each source id (none for a row stored before answers were attributed)."""
        out = []
        for source in ids:
            if source is None:
                continue
            if source not in self._records:  # written by another process (a worker), or by an earlier run
                row = self._db.execute("SELECT answered FROM sources WHERE id = ?", (source,)).fetchone()
                self._records[source] = tuple(json.loads(row[0])) if row else ()
            out.append(self._records[source])
        return out

    def mark(self) -> int:
        """Where the rows written from now on begin (`hold_apart`'s `since`)."""
        return int(self._db.execute("SELECT COALESCE(MAX(rowid), 0) FROM scores").fetchone()[0])

    def hold_apart(self, url: str, since: int, why: str) -> int:
        """Move the rows written after `since` that an endpoint at `url` answered to `held_apart`; how many."""
        ids = [i for i, text in self._db.execute("SELECT id, answered FROM sources") if named(json.loads(text), url)]
        if not ids:
            return 0
        marks = ",".join("?" * len(ids))
        where = f"rowid > ? AND source IN ({marks})"
        with self._db:
            self._db.execute("BEGIN")
            self._db.execute(f"INSERT INTO held_apart SELECT key, value, source, ? FROM scores WHERE {where}",
                             (why, since, *ids))  # fmt: skip
            moved = self._db.execute(f"DELETE FROM scores WHERE {where}", (since, *ids)).rowcount
            if moved:  # every process's index is read again from the table (`_catch_up`)
                self._db.execute("INSERT OR IGNORE INTO meta (name, value) VALUES ('moves', '0')")
                self._db.execute("UPDATE meta SET value = value + 1 WHERE name = 'moves'")
        self._catch_up()
        return int(moved)

    def others_write(self) -> None:
        """Other processes write to this store from now on (a run's workers): every lookup first reads the rows
        added since the last."""
        self._others = True

    def known_epoch(self, role: str, served: dict[str, Any], fingerprint: list[float] | None) -> str | None:
        """The recorded epoch of this model, or None when the store has never seen it: the one whose fingerprint
        matches (whatever the served name, path or max_model_len); without a fingerprint (a judge), the one
        served alike: the same identity but for the server's patch release."""
        with self._reporting():
            return self._known_epoch(role, served, fingerprint)

    def _known_epoch(self, role: str, served: dict[str, Any], fingerprint: list[float] | None) -> str | None:
        if fingerprint is None:  # alike: the same but for the server's patch release (`judge_identity`)
            query = "SELECT epoch, served FROM models WHERE role = ? AND fingerprint = 'null'"
            for epoch, known in self._db.execute(query, (role,)).fetchall():
                if judge_identity(json.loads(known)) == judge_identity(served):
                    return str(epoch)
            return None
        rows = self._db.execute("SELECT epoch, fingerprint FROM models WHERE role = ?", (role,))
        for epoch, fp in rows.fetchall():
            if fingerprints_match(fingerprint, json.loads(fp)):
                return str(epoch)
        return None

    def model_epoch(self, role: str, served: dict[str, Any], fingerprint: list[float] | None) -> str:
        """The epoch of the model a role's servers report: an earlier one when the fingerprint matches (the
        identity, when there is none), else a new one (recorded). Keys made with another epoch are never read
        for this model."""
        known = self.known_epoch(role, served, fingerprint)
        if known is not None:
            return known
        served_json = json.dumps(served, sort_keys=True)
        with self._reporting():
            count = self._db.execute("SELECT COUNT(*) FROM models").fetchone()[0]
        epoch = hashlib.sha256(f"{role}\0{served_json}\0{fingerprint}\0{count}".encode()).hexdigest()[:16]
        with self._reporting(), self._db:
            self._db.execute("BEGIN")
            self._db.execute(
                "INSERT INTO models (epoch, role, served, fingerprint) VALUES (?, ?, ?, ?)",
                (epoch, role, served_json, json.dumps(fingerprint)),
            )
        return epoch

    def epoch_fingerprint(self, epoch: str) -> list[float] | None:
        """The fingerprint an epoch was recorded with (the first of its model's: later ones match it)."""
        with self._reporting():
            found = self._db.execute("SELECT fingerprint FROM models WHERE epoch = ?", (epoch,)).fetchone()
        return json.loads(found[0]) if found is not None else None

    def count(self) -> int:
        with self._reporting():
            return int(self._db.execute("SELECT COUNT(*) FROM scores").fetchone()[0])

    def close(self) -> None:
        self._db.close()


class OpenRun:
    """A scoring run's open store and samples file (the run's own, or a worker's), closed together."""

    def __init__(self) -> None:
        self.store: ScoreStore | None = None
        self.samples: IO[str] | None = None

    def start(self, touch: Callable[[], None]) -> tuple[ScoreStore, IO[str]]:
        """Open the store and the samples file; `touch()` just before the first change (it raises when the run
        must not begin)."""
        raise NotImplementedError

    def close(self) -> None:
        if self.samples is not None:
            self.samples.close()
        if self.store is not None:
            self.store.close()


def _look(path: Path) -> sqlite3.Connection:
    """A read-only connection to the store. On a read-only file system SQLite cannot make a store's WAL index beside
    it: one closed cleanly (no log beside it: every commit in the file) is read as it is, as nothing writes there."""
    # the path percent-encoded: a '#', '?' or '%' in it would cut the URI elsewhere (and open another file, rwc)
    uri = path.absolute().as_uri()
    db = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None)
    try:
        db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone()
    except sqlite3.OperationalError:
        db.close()
        if not _read_only_fs(path.parent) or Path(f"{path}-wal").exists():
            raise
        db = sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)
    return db


def _read_only_fs(directory: Path) -> bool:
    try:
        return bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except (AttributeError, OSError):  # no statvfs (Windows)
        return False


def _value_text(value: Any) -> str:
    """A value as stored: its JSON text (a NaN or an infinity is never stored: ValueError). A finite float's is its
    repr, as json.dumps writes it; a list of them (a reward head's outputs, every value of a reward model) is
    joined as json.dumps joins it (a quarter of json.dumps's CPU, timeit)."""
    if type(value) is float and math.isfinite(value):
        return repr(value)
    if type(value) is list and all(type(v) is float and math.isfinite(v) for v in value):
        return "[" + ", ".join(map(float.__repr__, value)) + "]"
    return json.dumps(value, allow_nan=False)
