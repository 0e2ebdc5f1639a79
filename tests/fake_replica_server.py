"""A stand-in for `vllm serve` under a Ray replica (tests/test_ray_replicas.py): `--host H --port P` as the replica
sets them; `/health` answers 200, or 503 after SIGUSR1 (as a vLLM whose engine died); after SIGUSR2 its engine is
wedged: `/health` still answers, a scoring request (any POST) never does (a stuck collective, a wedged GPU).
`/v1/models` and `/openapi.json` answer as a pooling model's; `/metrics` counts the other requests as vLLM's does
(`http_requests_total`, /health and /metrics left out) and the POSTs answered (`vllm:request_success_total`); it
starts one child process of its own, as vLLM starts its engine core, so that a test can see the whole process group
end."""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sick: list[int] = []
wedged = threading.Event()
taken: list[str] = []  # every request but /health and /metrics
done: list[str] = []  # the POSTs answered
ANSWERS = {"/v1/models": {"data": [{"id": "fake"}]}, "/openapi.json": {"paths": {"/pooling": {}}}}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = json.dumps(ANSWERS[self.path]).encode() if self.path in ANSWERS else b""
        if self.path == "/metrics":
            body = (f'http_requests_total{{handler="/pooling",method="GET",status="2xx"}} {len(taken)}.0\n'
                    f'vllm:request_success_total{{finished_reason="stop"}} {len(done)}.0\n').encode()  # fmt: skip
        elif self.path != "/health":
            taken.append(self.path)
        self._send(body)

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("content-length", 0)))
        taken.append(self.path)
        if wedged.is_set():
            threading.Event().wait()  # never answers: this request's thread waits for good
        done.append(self.path)
        self._send(b"{}")

    def _send(self, body: bytes) -> None:
        self.send_response(503 if sick else 200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    args, _ = parser.parse_known_args()
    signal.signal(signal.SIGUSR1, lambda *_: sick.append(1))
    signal.signal(signal.SIGUSR2, lambda *_: wedged.set())
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)", "fake-engine-core"])
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True  # a wedged request's thread never ends: it must not keep the process
    server.serve_forever()


if __name__ == "__main__":
    main()
