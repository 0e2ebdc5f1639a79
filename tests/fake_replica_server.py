"""A stand-in for `vllm serve` under a Ray replica (tests/test_ray_replicas.py): `--host H --port P` as the replica
sets them; `/health` answers 200, or 503 after SIGUSR1 (as a vLLM whose engine died); `/metrics` counts the other
requests as vLLM's does (`http_requests_total`, /health and /metrics left out); it starts one child process of its
own, as vLLM starts its engine core, so that a test can see the whole process group end."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sick: list[int] = []
taken: list[str] = []  # every request but /health and /metrics


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = b""
        if self.path == "/metrics":
            body = f'http_requests_total{{handler="/pooling",method="GET",status="2xx"}} {len(taken)}.0\n'.encode()
        elif self.path != "/health":
            taken.append(self.path)
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
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)", "fake-engine-core"])
    ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
