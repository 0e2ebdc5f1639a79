"""Reading a Ray cluster's state API without a cluster: the answers the oldest and newest supported Ray releases
sent (tests/recorded/ray-state-*-RELEASE.json, recorded by tests/record_ray_state.py on a token-auth cluster),
served from loopback (tests/fake_ray_dashboard.py), and the answers a cluster cannot be made to send on demand:
HTML, garbage, partial, cut by the limit. The cluster's token, as Ray reads it, goes to every read and never into an
error. Ray itself is never imported here; tests/test_ray.py runs a real token-auth cluster."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
import yaml
from fake_ray_dashboard import FakeDashboard, actor, crowd
from helpers_cli import cli, one_error_line

from rmbench_client.cluster.auth import find_token
from rmbench_client.cluster.discovery import RayEndpoints, list_actors, replicas_by_node, url_of
from rmbench_client.config.loading import load_config
from rmbench_client.errors import ConfigError, EndpointError

RECORDED = Path(__file__).parent / "recorded"
RELEASES = ["2.52.0", "2.60.0"]  # the oldest and the newest of pyproject's `ray` range
TOKEN = "recorded-token-0123456789abcdef"  # the made-up token of the recordings
AUTH = ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_MODE")


def recorded(kind: str, release: str) -> bytes:
    return (RECORDED / f"ray-state-{kind}-{release}.json").read_bytes()


@pytest.fixture(autouse=True)
def no_real_token(tmp_path, monkeypatch):
    """HOME in a temporary directory and no token in the environment: no real token is ever read."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in AUTH:
        monkeypatch.delenv(name, raising=False)


def source(tmp_path: Path, dashboard: str, role: str = "reward") -> RayEndpoints:
    serve = {"engine": "vllm-cpu", "path": "models/tiny/reward", "cluster": "ray", "ray_dashboard": dashboard}
    roles = {role: {"served_model": "tiny-reward", "endpoints": "ray", "serve": serve}}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"model": "tiny-reward", "roles": roles}))
    return RayEndpoints(role, load_config(path).roles[role])


@pytest.mark.parametrize("release", RELEASES)
def test_recorded_answers_give_the_live_replicas(release, tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_AUTH_TOKEN", TOKEN)
    with FakeDashboard(token=TOKEN) as dash:
        dash.answer = (200, "application/json", recorded("actors", release))
        assert asyncio.run(source(tmp_path, dash.url).urls()) == ["http://127.0.0.1:40000", "http://127.0.0.1:40001"]
        path, query, authorized = dash.requests[0]
        assert path == "/api/v0/actors" and authorized
        # filtered by the cluster: the namespace and the state, as the state API allows
        assert query["filter_keys"] == ["ray_namespace", "state"] and query["filter_values"] == ["rmbench", "ALIVE"]
        assert query["filter_predicates"] == ["=", "="] and query["limit"] == ["10000"]
        dash.answer = (200, "application/json", recorded("actors-all", release))
        actors = asyncio.run(list_actors(dash.url, alive_only=False))
        assert sorted((a.name, a.state) for a in actors) == [
            ("reward:tiny-reward:0", "ALIVE"), ("reward:tiny-reward:1", "ALIVE"), ("reward:tiny-reward:2", "DEAD")
        ]  # fmt: skip
        assert {int(a.num_restarts) for a in actors} == {0, 1}  # replica 1 was restarted once


@pytest.mark.parametrize("release", RELEASES)
def test_recorded_list_cut_at_its_source_is_a_failed_read(release, tmp_path):
    answer = json.loads(recorded("actors-truncated", release))["data"]["result"]
    assert answer["total"] > answer["num_after_truncation"]  # what Ray said: six actors, five read
    with FakeDashboard() as dash:
        dash.answer = (200, "application/json", recorded("actors-truncated", release))
        with pytest.raises(EndpointError, match=rf"{dash.url}/api/v0/actors cut the list at its source \(5 of 6"):
            asyncio.run(source(tmp_path, dash.url).urls())


@pytest.mark.parametrize("release", RELEASES)
def test_recorded_refusals_name_what_to_set(release, tmp_path, monkeypatch):
    refused = json.loads(recorded("refused", release))
    with FakeDashboard(token=TOKEN) as dash:
        for status in ("401", "403"):
            assert refused[status]["status"] == int(status)
            dash.answer = None
            if status == "403":
                monkeypatch.setenv("RAY_AUTH_TOKEN", "not-the-token")
            with pytest.raises(ConfigError) as err:
                asyncio.run(source(tmp_path, dash.url).urls())
            message = str(err.value)
            assert dash.url in message and "RAY_AUTH_TOKEN" in message and "not-the-token" not in message
            assert ("no token is set" if status == "401" else "refused the token from RAY_AUTH_TOKEN") in message


@pytest.mark.parametrize("release", RELEASES)
def test_recorded_nodes_place_the_replicas(release, tmp_path):
    nodes = json.loads(recorded("nodes", release))["data"]["result"]["result"]
    actors = json.loads(recorded("actors-all", release))
    actors["data"]["result"]["result"][0]["node_id"] = nodes[1]["node_id"]
    with FakeDashboard() as dash:
        dash.actors = actors["data"]["result"]["result"]
        dash.nodes = nodes
        found = asyncio.run(replicas_by_node(dash.url, {"reward": "tiny-reward"}))
    assert sum(len(rows) for rows in found.values()) == 2  # the dead one is not listed
    assert all(where.startswith("127.0.0.1 (") for where in found)


def test_the_token_is_read_as_ray_reads_it(tmp_path, monkeypatch):
    home = Path(os.environ["HOME"])
    assert find_token() is None
    (home / ".ray").mkdir(parents=True)
    (home / ".ray" / "auth_token").write_text("from-home\n")
    token = find_token()
    assert token is not None and token.value == "from-home" and token.source.endswith(".ray/auth_token")
    named = tmp_path / "elsewhere"
    named.write_text("from-path")
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(named))
    token = find_token()
    assert token is not None and token.value == "from-path" and str(named) in token.source
    monkeypatch.setenv("RAY_AUTH_TOKEN", "from-env")
    token = find_token()
    assert token is not None and token.value == "from-env" and token.source == "RAY_AUTH_TOKEN"
    assert "from-env" not in repr(token)
    monkeypatch.delenv("RAY_AUTH_TOKEN")
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="RAY_AUTH_TOKEN_PATH names .*missing, which cannot be read"):
        find_token()


def test_the_token_file_is_sent(tmp_path):
    (Path(os.environ["HOME"]) / ".ray").mkdir(parents=True)
    (Path(os.environ["HOME"]) / ".ray" / "auth_token").write_text(TOKEN)
    with FakeDashboard([actor("reward:tiny-reward:0", "http://127.0.0.1:9")], token=TOKEN) as dash:
        assert asyncio.run(source(tmp_path, dash.url).urls()) == ["http://127.0.0.1:9"]


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        ((200, "text/html", b"<!doctype html><html><body>Sign in</body></html>"), ["text/html", "<!doctype html>"]),
        ((200, "application/json", b'{"data": {"result": 3}}'), ["JSON of another shape"]),
        ((200, "text/plain", b"\x00\x01garbage"), ["not the state API's JSON"]),
        ((502, "text/html", b"<html>Bad Gateway</html>"), ["answered 502", "Bad Gateway"]),
        ((500, "application/json", b'{"result": false, "msg": "Failed to query GCS"}'), ["Failed to query GCS"]),
    ],
)
def test_a_bad_answer_is_one_error_naming_the_dashboard(answer, words, tmp_path):
    with FakeDashboard() as dash:
        dash.answer = answer
        with pytest.raises(EndpointError) as err:
            asyncio.run(source(tmp_path, dash.url).urls())
    assert dash.url in str(err.value) and "\n" not in str(err.value)
    for word in words:
        assert word in str(err.value)


def test_partial_or_limited_answers_are_failed_reads(tmp_path):
    with FakeDashboard(crowd(20), partial="Failed to query 1 of 3 raylets") as dash:
        with pytest.raises(EndpointError, match="partial list: Failed to query 1 of 3 raylets"):
            asyncio.run(source(tmp_path, dash.url).urls())
    with FakeDashboard(crowd(20), source_limit=10) as dash:
        with pytest.raises(EndpointError, match=r"cut the list at its source \(10 of 20 actors\)"):
            asyncio.run(source(tmp_path, dash.url).urls())
    rows = [actor("reward:tiny-reward:0", "http://127.0.0.1:9")]
    limited = {"data": {"result": {"total": 3, "num_after_truncation": 3, "num_filtered": 3, "result": rows}}}
    with FakeDashboard() as dash:
        dash.answer = (200, "application/json", json.dumps(limited).encode())
        with pytest.raises(EndpointError, match="sent 1 of 3 actors"):
            asyncio.run(source(tmp_path, dash.url).urls())


def test_a_whole_answer_among_many_actors_gives_the_roles_urls(tmp_path):
    with FakeDashboard(crowd(1000, replicas=3)) as dash:
        urls = asyncio.run(source(tmp_path, dash.url).urls())
    assert urls == [f"http://127.0.0.1:{40000 + i}" for i in range(3)]
    assert url_of("Replica(http://[::1]:80)") == "http://[::1]:80" and url_of("Replica()") is None


def test_no_replica_on_the_cluster_is_one_error(tmp_path):
    with FakeDashboard([actor("policy:other:0", "http://127.0.0.1:9")]) as dash:
        with pytest.raises(EndpointError, match="no reward replica serving tiny-reward is alive.*rmbench-client serve"):
            asyncio.run(source(tmp_path, dash.url).urls())


def config_file(tmp_path: Path, dashboard: str) -> Path:
    serve = {"engine": "vllm-cpu", "path": "models/tiny/reward", "cluster": "ray", "ray_dashboard": dashboard}
    role = {"served_model": "tiny-reward", "endpoints": "ray", "serve": serve}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"model": "tiny-reward", "roles": {"reward": role}}))
    return path


def test_status_and_run_say_in_one_line_what_is_wrong(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in AUTH}
    data = tmp_path / "p.jsonl"
    data.write_text(json.dumps({"prompt": "q", "chosen": "a", "rejected": "b"}) + "\n")
    run = ["--benchmark", "pairwise", "--data", str(data), "--out", str(tmp_path / "run")]
    with FakeDashboard(crowd(20, replicas=5), token=TOKEN) as dash:
        path = config_file(tmp_path, dash.url)
        one_error_line(cli("status", "--config", str(path), env=env), 2, dash.url, "no token is set", "RAY_AUTH_TOKEN")
        one_error_line(cli("run", "--config", str(path), *run, env=env), 2, dash.url, "RAY_AUTH_TOKEN")
        wrong = env | {"RAY_AUTH_TOKEN": "not-the-token"}
        proc = cli("status", "--config", str(path), env=wrong)
        line = one_error_line(proc, 2, "refused the token from RAY_AUTH_TOKEN")
        assert "not-the-token" not in line
        proc = cli("status", "--config", str(path), "--json", env=env | {"RAY_AUTH_TOKEN": TOKEN})
        assert proc.returncode == 0, proc.stderr
        assert sum(len(rows) for rows in json.loads(proc.stdout)["nodes"].values()) == 5
        dash.token, dash.answer = None, (200, "text/html", b"<html>proxy login</html>")
        one_error_line(cli("status", "--config", str(path), env=env), 1, dash.url, "text/html")
        one_error_line(cli("run", "--config", str(path), *run, env=env), 1, dash.url, "text/html")
    assert not (tmp_path / "run" / "samples.jsonl").exists()
