"""A stand-in for the server environment `serve` starts vLLM from ($RMBENCH_SERVER_VENV): its `bin/python` runs
fake_vllm.py's reward server on the port and under the name `serve` asks for, with the checkpoint's path as the
model's root, so that `serve` and `watch` run end to end without a real engine. A checkpoint listed in the faults
file ({path: n}) gets a server that dies after n scoring requests, once: the next start of that checkpoint is
healthy (a server that failed mid-run, then came back).

    python fake_server_venv.py -m vllm.entrypoints... --model PATH --port P --served-model-name NAME ... (ignored)
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
import threading
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FAULTS_ENV = "FAKE_SERVER_FAULTS"


def make_venv(root: Path) -> Path:
    """A server environment whose python is this stand-in."""
    python = root / "bin" / "python"
    python.parent.mkdir(parents=True, exist_ok=True)
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{Path(__file__).resolve()}" "$@"\n')
    python.chmod(python.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return root


def _dies_after(model: str) -> int | None:
    """How many scoring requests this start of `model` answers before it dies (None: it never does); taken off the
    faults file, so that it dies once."""
    path = os.environ.get(FAULTS_ENV)
    if not path or not Path(path).is_file():
        return None
    faults = json.loads(Path(path).read_text())
    n = faults.pop(model, None)
    Path(path).write_text(json.dumps(faults))
    return n


def main() -> None:
    sys.path.insert(0, str(HERE))
    from fake_vllm import FakeVllm

    parser = argparse.ArgumentParser()
    parser.add_argument("-m", dest="module")
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--served-model-name", required=True)
    args, _ = parser.parse_known_args()
    limit = _dies_after(args.model)

    class Dying(FakeVllm):
        def answer(self, path: str, req: Any) -> tuple[int, Any]:
            if limit is not None and path == "/pooling" and self.scored[path] >= limit:
                os._exit(1)  # as a crashed server: its connections drop
            return super().answer(path, req)

    Dying("reward", args.served_model_name, root=args.model, delay=0.01, port=args.port).start()
    threading.Event().wait()  # until `serve` stops it (or it dies)


if __name__ == "__main__":
    main()
