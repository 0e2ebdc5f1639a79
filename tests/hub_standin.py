"""A stand-in for the Hugging Face hub on loopback: it answers the calls huggingface_hub's `snapshot_download` and
`hf_hub_download` make for a dataset repository (repo info, tree listing, file metadata and download) and
`hf_hub_download`'s for a model repository's file, serving files the test hands it. Point `HF_ENDPOINT` at `url`.
Every request is recorded."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse


def hub_env(tmp_path: Path, url: str) -> dict[str, str]:
    """The environment of a CLI subprocess that downloads from the hub at `url`: online whatever this process set
    (tests/transformers_reference.py sets HF_HUB_OFFLINE), no token, a cache of its own, no data directory."""
    env = {k: v for k, v in os.environ.items() if k not in ("RMBENCH_DATA_DIR", "HF_HUB_OFFLINE", "HF_TOKEN")}
    return env | {"HF_ENDPOINT": url, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_DISABLE_PROGRESS_BARS": "1"}


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class Hub:
    url: str
    repos: dict[str, dict[str, bytes]]
    requests: list[tuple[str, str]] = field(default_factory=list)

    def commit(self, repo: str) -> str:
        return hashlib.sha1(repo.encode()).hexdigest()


def _handler(hub: Hub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # quiet: the test reads hub.requests
            return

        def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for k, v in {"Content-Length": str(len(body)), **(headers or {})}.items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _json(self, data: object) -> None:
            self._send(200, json.dumps(data).encode(), {"Content-Type": "application/json"})

        def _route(self) -> None:
            path = unquote(urlparse(self.path).path)
            hub.requests.append((self.command, path))
            parts = path.strip("/").split("/")
            if parts[:2] == ["api", "datasets"] and len(parts) >= 6:
                repo = "/".join(parts[2:4])
                files = hub.repos.get(repo)
                if files is None:
                    return self._send(404, b'{"error": "Repository not found"}', {"X-Error-Code": "RepoNotFound"})
                if parts[4] == "revision":
                    siblings = [{"rfilename": name} for name in files]
                    return self._json({"id": repo, "sha": hub.commit(repo), "siblings": siblings, "private": False})
                if parts[4] == "tree":
                    dirs = sorted({name.rsplit("/", 1)[0] for name in files if "/" in name})
                    entries = [
                        {"type": "directory", "oid": git_blob_id(d.encode()), "size": 0, "path": d} for d in dirs
                    ]
                    entries += [
                        {"type": "file", "oid": git_blob_id(data), "size": len(data), "path": name}
                        for name, data in files.items()
                    ]
                    return self._json(entries)
            # a file: datasets/<owner>/<name>/resolve/<rev>/<path>, or <owner>/<name>/resolve/... of a model
            model_file = len(parts) >= 5 and parts[2] == "resolve" and parts[0] != "datasets"
            if model_file or (parts[:1] == ["datasets"] and len(parts) >= 6 and parts[3] == "resolve"):
                head = 0 if model_file else 1
                repo, name = "/".join(parts[head : head + 2]), "/".join(parts[head + 4 :])
                data = hub.repos.get(repo, {}).get(name)
                if data is None:
                    return self._send(404, b"", {"X-Error-Code": "EntryNotFound"})
                headers = {"X-Repo-Commit": hub.commit(repo), "ETag": f'"{git_blob_id(data)}"'}
                return self._send(200, data, headers)
            self._send(404, b"")

        do_GET = do_HEAD = _route

    return Handler


@contextmanager
def serve_hub(repos: dict[str, dict[str, bytes]]) -> Iterator[Hub]:
    """The stand-in on 127.0.0.1 (a free port the kernel picks), serving `repos`: repo id -> path -> bytes."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    hub = Hub(f"http://127.0.0.1:{server.server_address[1]}", repos)
    server.RequestHandlerClass = _handler(hub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
