"""What a W&B offline run wrote, read back: the history rows of its `.wandb` file.

The file is W&B's header (`:W&B`, a magic number and a version: 7 bytes), then LevelDB's log format (32 KiB blocks
of records, each a 7-byte header: CRC, length, and whether it is a whole record or a first, middle or last part),
each record one protobuf `Record` of wandb's own `wandb_internal_pb2`.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BLOCK = 32 * 1024
HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def _records(data: bytes) -> Iterator[bytes]:
    assert data[:4] == b":W&B", "not a W&B run file"
    pos, parts = HEADER, b""
    while pos + HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER:  # a block's tail too short for a header is padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + HEADER])
        if kind == 0 and length == 0:  # zero padding to the block's end
            pos += left
            continue
        chunk = data[pos + HEADER : pos + HEADER + length]
        pos += HEADER + length
        if kind == FULL:
            yield chunk
        elif kind == FIRST:
            parts = chunk
        elif kind == MIDDLE:
            parts += chunk
        elif kind == LAST:
            yield parts + chunk


def history(run_file: Path) -> list[dict[str, Any]]:
    """Every history row the run file holds, its values decoded from their JSON text (`_step` among them)."""
    from wandb.proto import wandb_internal_pb2 as pb

    rows = []
    for raw in _records(run_file.read_bytes()):
        record = pb.Record()
        record.ParseFromString(raw)
        if record.WhichOneof("record_type") == "history":
            rows.append({item.key or "/".join(item.nested_key): json.loads(item.value_json)
                         for item in record.history.item})  # fmt: skip
    return rows
