"""Reading JSON, JSONL and parquet files with one clear error line naming the file and record."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from ...errors import DataError


def _open_binary(path: Path) -> BinaryIO:
    """`path` opened for reading, or one DataError line naming it."""
    try:
        return path.open("rb")
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise DataError(f"{path}: is a directory, expected a file") from None


def read_text(path: Path) -> str:
    """The file's text; a UTF-8 byte order mark at its start (as some Windows editors write) is not part of it."""
    with _open_binary(path) as handle:
        data = handle.read()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = exc.object[: exc.start].count(b"\n") + 1
        raise DataError(f"{path}: not UTF-8 (invalid byte at line {line}, offset {exc.start})") from None


def data_files(directory: Path, nested: bool = False) -> list[Path]:
    """Every parquet/JSON/JSONL file of a directory (`nested`: and of its sub-directories), by path."""
    found = directory.rglob("*") if nested else directory.iterdir()
    return sorted(p for p in found if p.suffix in (".parquet", ".json", ".jsonl") and p.is_file())


def read_json(path: Path) -> Any:
    """The JSON values of a file: one value, or a list of them when the file holds several one after another
    (JSON lines, or reward-bench's `save_to_hub` list form: indent=4 records written back to back)."""
    if path.suffix == ".jsonl":
        return list(iter_records(path))
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            return list(_values(path, text))
        raise DataError(f"{path}: line {exc.lineno}, column {exc.colno}: not valid JSON ({exc.msg})") from None


def read_records(path: Path) -> list[Any]:
    """Records of a JSON list, JSON lines, records written one after another, a JSON object of records or of
    columns (`Dataset.to_dict()`), or a parquet file."""
    if path.suffix == ".parquet":
        return _read_parquet(path)
    data = read_json(path)
    if isinstance(data, dict):
        for key in ("data", "records", "rows"):
            if isinstance(data.get(key), list):
                return list(data[key])
        rows = columns_to_records(data)
        if rows is None:
            raise DataError(f"{path}: expected a list of records, found an object with keys {sorted(data)[:5]}")
        return rows
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a list of records, found {type(data).__name__}")
    return data


def iter_records(path: Path) -> Iterator[Any]:
    """The records of `path` one at a time: JSON lines are read line by line (a large file is never held whole);
    other formats as `read_records` reads them."""
    if path.suffix != ".jsonl":
        yield from read_records(path)
        return
    with _open_binary(path) as handle:
        for lineno, raw in enumerate(handle, 1):  # newlines only: U+2028 and kin may sit inside a text
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")  # a byte order mark may open the file
            except UnicodeDecodeError as exc:
                raise DataError(f"{path}: not UTF-8 (invalid byte at line {lineno}, offset {exc.start})") from None
            if line.strip():
                try:
                    yield json.loads(line.rstrip("\n"))  # the column counts within this line
                except json.JSONDecodeError as exc:
                    where = f"line {lineno}, column {exc.colno}"
                    raise DataError(f"{path}: {where}: not valid JSON ({exc.msg})") from None


def columns_to_records(data: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Records of a column-wise object (lists of one length, as `Dataset.to_dict()` gives; scalar entries such as
    reward-bench's `model` are metadata and left out); None when the object is not column-wise."""
    columns = {k: v for k, v in data.items() if isinstance(v, list)}
    if not columns or len({len(v) for v in columns.values()}) != 1:
        return None
    if any(isinstance(v, dict) for k, v in data.items() if k not in columns):
        return None
    n = len(next(iter(columns.values())))
    return [{k: v[i] for k, v in columns.items()} for i in range(n)]


def _values(path: Path, text: str) -> Iterator[Any]:
    decoder = json.JSONDecoder()
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos].isspace():
            pos += 1
        if pos == end:
            return
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: line {exc.lineno}, column {exc.colno}: not valid JSON ({exc.msg})") from None
        yield value


def _read_parquet(path: Path) -> list[Any]:
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        raise DataError(f"{path}: reading parquet needs pyarrow (pip install pyarrow)") from None
    try:
        rows: list[Any] = pq.read_table(path).to_pylist()
        return rows
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise DataError(f"{path}: not a readable parquet file ({exc})") from None


def record_name(path: Path, index: int, record: Any) -> str:
    """'FILE: record N (id X)' for error messages."""
    rid = record.get("id") if isinstance(record, dict) else None
    return f"{path}: record {index}" + (f" (id {rid})" if rid is not None else "")
