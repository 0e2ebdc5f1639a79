"""A loopback stand-in for a Ray dashboard's state API (`/api/v0/actors`, `/api/v0/nodes`), answering as Ray 2.60's
does (the shapes of tests/recorded/ray-state-*-2.60.0.json), for what a real cluster cannot be made to send on
demand: thousands of actors, a list cut at its source or by its limit, a partial answer, an HTML page, garbage.
Never a stand-in for a cluster in an end-to-end test of serving (tests/test_ray.py runs a real one).

It follows Ray's funnel (ray/util/state/common.py ListApiResponse): the data source returns at most `source_limit`
rows (`total` all of them, `num_after_truncation` those returned), the API server then filters by the request's
`filter_keys` / `filter_predicates` / `filter_values` (`num_filtered`), and sends at most `limit` rows. With a
`token`, it answers 401 without `Authorization: Bearer ...` and 403 with another token, as Ray's middleware does.
`answer` replaces every answer with a fixed one (status, content type, body).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from fake_vllm import free_port


def actor(name: str | None, url: str | None, *, namespace: str = "rmbench", state: str = "ALIVE",
          node: str = "n1", index: int = 0) -> dict[str, Any]:  # fmt: skip
    """One actor as Ray 2.60's state API lists it (detail=true; the fields of tests/recorded)."""
    return {
        "actor_id": f"{index:032x}", "class_name": "Replica", "state": state, "job_id": "01000000", "name": name,
        "node_id": node, "pid": 1000 + index, "ray_namespace": namespace, "serialized_runtime_env": "{}",
        "required_resources": {}, "death_cause": None, "is_detached": True, "placement_group_id": None,
        "repr_name": f"Replica({url})" if url else "", "num_restarts": "0",
        "num_restarts_due_to_lineage_reconstruction": "0", "num_restarts_due_to_node_preemption": "0",
        "call_site": None, "label_selector": {}, "fallback_strategy": None,
    }  # fmt: skip


def crowd(n: int, replicas: int = 8, role: str = "reward", model: str = "tiny-reward") -> list[dict[str, Any]]:
    """`n` actors: `replicas` replicas of `role` in the namespace rmbench, the rest other programs' actors."""
    ours = [actor(f"{role}:{model}:{i}", f"http://127.0.0.1:{40000 + i}", index=i) for i in range(replicas)]
    others = [actor(f"task-{i}", None, namespace=f"job{i % 7}", index=i) for i in range(replicas, n)]
    return ours + others


class FakeDashboard:
    """A state API on 127.0.0.1 holding `actors` (and `nodes`); `requests` records each request's path and query."""

    def __init__(self, actors: list[dict[str, Any]] | None = None, *, token: str | None = None,
                 source_limit: int = 10_000, partial: str = "") -> None:  # fmt: skip
        self.actors = actors or []
        self.nodes = [{"node_id": "n1", "node_ip": "127.0.0.1", "state": "ALIVE"}]
        self.token, self.source_limit, self.partial = token, source_limit, partial
        self.answer: tuple[int, str, bytes] | None = None  # (status, content type, body) for every request
        self.requests: list[tuple[str, dict[str, list[str]], bool]] = []  # path, query, whether a token came
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server: ThreadingHTTPServer | None = None

    def listing(self, rows: list[dict[str, Any]], query: dict[str, list[str]]) -> dict[str, Any]:
        """Ray's funnel: the source's cut, the API server's filters, the request's limit."""
        source = rows[: self.source_limit]
        keys, predicates, values = (query.get(k, []) for k in ("filter_keys", "filter_predicates", "filter_values"))
        kept = [r for r in source if all((str(r.get(k)) == v) == (p == "=")
                                         for k, p, v in zip(keys, predicates, values, strict=True))]  # fmt: skip
        limit = int(query.get("limit", ["100"])[0])
        result = {"total": len(rows), "num_after_truncation": len(source), "num_filtered": len(kept),
                  "result": kept[:limit], "partial_failure_warning": self.partial, "warnings": None}  # fmt: skip
        return {"result": True, "msg": "", "data": {"result": result}}

    def __enter__(self) -> FakeDashboard:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                parsed = urlparse(self.path)
                query = parse_qs(parsed.query)
                auth = self.headers.get("Authorization", "")
                fake.requests.append((parsed.path, query, bool(auth)))
                if fake.token and not auth:
                    return self.send(401, "text/plain", b"Unauthorized: Missing authentication token")
                if fake.token and auth != f"Bearer {fake.token}":
                    return self.send(403, "text/plain", b"Forbidden: Invalid authentication token")
                if fake.answer is not None:
                    return self.send(*fake.answer)
                rows = {"/api/v0/actors": fake.actors, "/api/v0/nodes": fake.nodes}.get(parsed.path)
                if rows is None:
                    return self.send(404, "text/plain", b"404: Not Found")
                body = json.dumps(fake.listing(rows, query)).encode()
                return self.send(200, "application/json", body)

            def send(self, status: int, kind: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()


def main() -> None:
    """`python tests/fake_ray_dashboard.py ACTORS REPLICAS [same-namespace]`: serve until killed (the bench's
    discovery step, bench/ray_discovery_scale.py); prints the URL once it listens."""
    import sys
    import time

    n, replicas = int(sys.argv[1]), int(sys.argv[2])
    actors = crowd(n, replicas)
    if sys.argv[3:] == ["same-namespace"]:  # every actor in the namespace rmbench: other roles' replicas, say
        for row in actors[replicas:]:
            row["ray_namespace"] = "rmbench"
    with FakeDashboard(actors) as dash:
        print(dash.url, flush=True)
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    main()
