"""Several endpoints from the first second: an endpoint down at start joins when it answers, every endpoint that
joins passes the identity check first, and a role's endpoint list may change mid-run (pool/discovery.py).

Runs go through the CLI's `main` in this process, against loopback fakes of vLLM (fake_vllm.py); an endpoint is
"down" when nothing listens on its port yet, and a background thread starts it once the run is scoring.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from fake_vllm import SCORING, TEMPLATE, FakeVllm
from helpers_cli import sample_lines, stored

from rmbench_client import constants as C
from rmbench_client.cli import main
from rmbench_client.model_kinds import factory
from rmbench_client.model_kinds.reward import FINGERPRINT_PROBES

pytestmark = pytest.mark.timeout(120)
PROMPTS = 120
REFRESH = 0.2  # client.endpoint_refresh: the source is read again this often


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "pairs.jsonl"
    records = [{"prompt": f"Question {i}?", "chosen": f"A careful answer {i * 7}.", "rejected": f"No {i}."}
               for i in range(PROMPTS)]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def config(tmp_path: Path, kind: str, urls: dict[str, list[str]], concurrency: int = 1, **extra: Any) -> Path:
    """A run's config of type `kind` on these endpoints per role (served names: fake-<role>), `concurrency` requests
    at once on each."""
    roles = {
        role: {"served_model": f"fake-{role}", "endpoints": eps, "concurrency": concurrency}
        for role, eps in urls.items()
    }
    client = {"endpoint_refresh": REFRESH} | extra.pop("client", {})
    cfg = {"benchmark": "pairwise", "model": f"fake-{kind}", "type": kind, "roles": roles, "client": client, **extra}
    path = tmp_path / f"{kind}-{len(list(tmp_path.iterdir()))}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def run(cfg: Path, data: Path, out: Path) -> int:
    return main(["run", "--config", str(cfg), "--data", str(data), "--out", str(out), "--no-progress"])


def untimed(value: Any) -> Any:
    """A sample line without what a judge's answer took (`seconds`) and which endpoints answered (`answered_by`):
    the fields two equal runs on other servers differ in."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in ("seconds", "answered_by")}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def samples(out: Path) -> list[dict]:
    return [untimed(json.loads(line)) for line in (out / C.SAMPLES_FILE).read_text().splitlines()]


def scored(*fakes: FakeVllm) -> int:
    return sum(sum(f.scored.values()) for f in fakes)


@contextmanager
def when(condition: Callable[[], bool], action: Callable[[], Any]) -> Iterator[None]:
    """Do `action` once `condition` holds (polled from a thread, while the run goes on in this one)."""
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            if condition():
                action()
                return
            time.sleep(0.005)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def checked_before_work(fake: FakeVllm, routes: bool = True) -> None:
    """The endpoint's first requests were the identity check (its name, and its routes where the kind needs one),
    before any scoring request."""
    paths = [p for p in fake.paths if p != "/health"]
    first_scoring = min(i for i, p in enumerate(paths) if p in SCORING)
    assert paths[0] == "/v1/models", paths[:5]
    assert not routes or "/openapi.json" in paths[:first_scoring], paths[:5]


def template_options(mode: str, tmp_path: Path) -> dict[str, Any]:
    """`reward.template` (and, for `auto`, the model directory holding its tokenizer_config.json), every prompt its
    own request as DPO's and a judge's are (`texts_per_request: 1`): runs here change an endpoint after so many
    requests, which shared requests (a few per run of 120 prompts) would never reach."""
    if mode in ("server", "ids"):
        return {"reward": {"template": mode, "texts_per_request": 1}}
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "tokenizer_config.json").write_text(json.dumps({"chat_template": TEMPLATE}))
    if mode == "auto":
        return {"reward": {"template": "auto", "texts_per_request": 1}, "serve": {"path": str(model)}}
    (tmp_path / "template.jinja").write_text(TEMPLATE)
    return {"reward": {"template": str(tmp_path / "template.jinja"), "texts_per_request": 1}}


def reward_config(tmp_path: Path, urls: list[str], mode: str = "text", **extra: Any) -> Path:
    options = template_options(mode, tmp_path)
    serve = options.pop("serve", None)
    path = config(tmp_path, "reward", {"reward": urls}, **options, **extra)
    if serve:  # the role's model directory: where `auto` finds the model's template
        cfg = yaml.safe_load(path.read_text())
        cfg["roles"]["reward"]["serve"] = serve
        path.write_text(yaml.safe_dump(cfg))
    return path


# --- an endpoint down at start ---------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["server", "ids", "auto", "text"])
def test_a_reward_endpoint_down_at_start_joins_when_it_answers(mode, data, tmp_path, caplog):
    with FakeVllm("reward", "fake-reward").start() as alone:
        assert run(reward_config(tmp_path, [alone.url], mode), data, tmp_path / "alone") == 0
    with FakeVllm("reward", "fake-reward", delay=0.02).start() as a, FakeVllm("reward", "fake-reward") as b:
        with when(lambda: scored(a) >= 10, b.start):
            code = run(reward_config(tmp_path, [a.url, b.url], mode), data, tmp_path / "run")
        assert code == 0, caplog.text[-2000:]
        assert b.scored["/pooling"] > 1  # it joined, and got work beyond its fingerprint
        checked_before_work(b)
    assert f"{b.url} not reachable yet" in caplog.text
    assert samples(tmp_path / "run") == samples(tmp_path / "alone")


@pytest.mark.slow
def test_a_policy_endpoint_down_at_start_joins_when_it_answers(data, tmp_path, caplog):
    with FakeVllm("policy", "fake-policy").start() as p, FakeVllm("policy", "fake-reference").start() as r:
        assert run(config(tmp_path, "dpo", {"policy": [p.url], "reference": [r.url]}), data, tmp_path / "alone") == 0
    with (
        FakeVllm("policy", "fake-policy", delay=0.02).start() as p1,
        FakeVllm("policy", "fake-policy") as p2,
        FakeVllm("policy", "fake-reference").start() as r,
    ):
        roles = {"policy": [p1.url, p2.url], "reference": [r.url]}
        with when(lambda: scored(p1) >= 10, p2.start):
            code = run(config(tmp_path, "dpo", roles), data, tmp_path / "run")
        assert code == 0, caplog.text[-2000:]
        assert p2.scored["/v1/completions"] > 1
        checked_before_work(p2)
    assert samples(tmp_path / "run") == samples(tmp_path / "alone")


@pytest.mark.slow
def test_a_judge_endpoint_down_at_start_joins_after_its_identity_check(data, tmp_path, caplog):
    with FakeVllm("policy", "fake-judge").start() as alone:
        assert run(config(tmp_path, "judge", {"judge": [alone.url]}), data, tmp_path / "alone") == 0
    with FakeVllm("policy", "fake-judge", delay=0.02).start() as a, FakeVllm("policy", "fake-judge") as b:
        with when(lambda: scored(a) >= 10, b.start):
            assert run(config(tmp_path, "judge", {"judge": [a.url, b.url]}), data, tmp_path / "run") == 0
        assert b.scored["/v1/chat/completions"] > 0
        checked_before_work(b, routes=False)
    assert samples(tmp_path / "run") == samples(tmp_path / "alone")


# --- an endpoint that joins serving another model --------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind, other",
    [
        ("reward", {"model": "other-model"}),
        ("reward", {"model": "fake-reward", "shift": 0.5}),  # the same name, another checkpoint
        ("dpo", {"model": "fake-policy", "shift": -0.5}),
        ("judge", {"model": "fake-judge", "root": "/models/another"}),
    ],
)
def test_a_late_endpoint_serving_another_model_never_gets_work(kind, other, data, tmp_path, caplog):
    server = "reward" if kind == "reward" else "policy"
    role = {"reward": "reward", "dpo": "policy", "judge": "judge"}[kind]

    def roles(urls: list[str], reference: FakeVllm) -> dict[str, list[str]]:
        return {role: urls} | ({"reference": [reference.url]} if kind == "dpo" else {})

    extra = template_options("text", tmp_path) if kind == "reward" else {}
    with FakeVllm(server, f"fake-{role}").start() as alone, FakeVllm("policy", "fake-reference").start() as r:
        assert run(config(tmp_path, kind, roles([alone.url], r), **extra), data, tmp_path / "alone") == 0
        with FakeVllm(server, f"fake-{role}", delay=0.02).start() as a, FakeVllm(server, **other) as b:
            with when(lambda: scored(a) >= 10, b.start):
                assert run(config(tmp_path, kind, roles([a.url, b.url], r), **extra), data, tmp_path / "run") == 0
            assert b.paths, "the late endpoint was never asked"
            # checked again on the probe schedule (the right server may come back): at most one fingerprint per
            # admission, never a prompt
            admissions = b.paths.count("/v1/models")
            assert scored(b) <= (admissions if "shift" in other else 0), b.paths
            assert "shift" not in other or kind != "reward" or b.units == b.probed
    assert f"{kind if kind != 'dpo' else 'policy'} endpoint {b.url} is left out: " in caplog.text
    assert samples(tmp_path / "run") == samples(tmp_path / "alone")


# --- a source whose list changes -------------------------------------------------------------------------------


class Listed:
    """A source whose URLs the test changes mid-run (a cluster registry, played by hand); `fail` makes every read
    raise, as a source does whose registry answers in part."""

    def __init__(self, urls: list[str]) -> None:
        self.now = urls
        self.reads = 0
        self.fail = False
        self.where: dict[str, dict[str, str]] = {}  # what `about` says of a URL (a Ray replica and its node)

    async def urls(self) -> list[str]:
        self.reads += 1
        if self.fail:
            raise RuntimeError("the registry answered in part")
        return list(self.now)

    def about(self, url: str) -> dict[str, str]:
        return self.where.get(url, {})


@pytest.fixture
def listed(monkeypatch) -> Listed:
    source = Listed([])
    monkeypatch.setattr(factory, "source_for", lambda name, role: source)
    return source


@pytest.mark.slow
def test_a_replaced_endpoint_loses_nothing_and_counts_nothing_twice(listed, data, tmp_path, caplog):
    caplog.set_level(logging.INFO, "rmbench_client.pool.endpoint_pool")
    with FakeVllm("reward", "fake-reward").start() as alone:
        listed.now = [alone.url]
        assert run(reward_config(tmp_path, [alone.url]), data, tmp_path / "alone") == 0
    a, b, c = (FakeVllm("reward", "fake-reward", delay=0.05) for _ in range(3))  # slow: c joins long before the end
    with a.start(), b.start(), c:

        def replace_b() -> None:  # b's node dies; the registry lists its restarted replica c
            b.stop()
            c.start()
            listed.now = [a.url, c.url]

        listed.now = [a.url, b.url]
        with when(lambda: scored(a, b) >= 40, replace_b):
            assert run(reward_config(tmp_path, [a.url]), data, tmp_path / "run") == 0, caplog.text[-2000:]
        assert c.scored["/pooling"] > 1, caplog.text  # admitted (its fingerprint), then given work
        checked_before_work(c)
    lines = samples(tmp_path / "run")
    assert len({line["id"] for line in lines}) == len(lines) == PROMPTS
    assert lines == samples(tmp_path / "alone")


def test_a_replica_registered_mid_run_gets_work_though_none_is_missing(listed, data, tmp_path, caplog):
    """The source is read on its period for the whole run, not only while the pool is short: a replica the
    registry lists mid-run (a scale-up) joins after its identity check and shares the work. Every answer names the
    replica and node the source gives for its URL (as the Ray source does), in the samples and the summary."""
    caplog.set_level(logging.INFO, "rmbench_client")
    with FakeVllm("reward", "fake-reward", delay=0.03).start() as a, FakeVllm("reward", "fake-reward").start() as b:
        listed.now = [a.url]
        listed.where = {a.url: {"replica": "reward#a", "node": "n1"}, b.url: {"replica": "reward#b", "node": "n2"}}
        with when(lambda: scored(a) >= 20, lambda: setattr(listed, "now", [a.url, b.url])):
            assert run(reward_config(tmp_path, [a.url]), data, tmp_path / "run") == 0, caplog.text[-2000:]
        assert b.units - b.probed > 10, (b.units, b.probed)  # prompts, beyond its identity checks
        checked_before_work(b)
    assert f"reward endpoint {b.url} is listed: it joins once it passes the identity check" in caplog.text
    lines = samples(tmp_path / "run")
    assert len({line["id"] for line in lines}) == len(lines) == PROMPTS
    answerers = {json.dumps(x, sort_keys=True) for line in sample_lines(tmp_path / "run", keep_answerers=True)
                 for x in line["answered_by"]}  # fmt: skip
    assert all(json.loads(x)["units"] == [0, 1] for x in answerers)  # one request a prompt: both scores from one
    answerers = {
        json.dumps({k: v for k, v in json.loads(x).items() if k != "units"}, sort_keys=True) for x in answerers
    }
    assert {json.loads(x)["url"] for x in answerers} == {a.url, b.url}
    for fake, where in ((a, listed.where[a.url]), (b, listed.where[b.url])):
        want = {"role": "reward", "url": fake.url, "release": "0.32.0"} | where
        assert json.dumps(want, sort_keys=True) in answerers, answerers
    in_summary = json.loads((tmp_path / "run" / C.SUMMARY_FILE).read_text())["answered_by"]
    assert {(x["url"], x["replica"], x["node"]) for x in in_summary} == {
        (a.url, "reward#a", "n1"),
        (b.url, "reward#b", "n2"),
    }


@pytest.mark.slow
def test_a_replica_removed_mid_run_drains(listed, data, tmp_path, caplog):
    """A replica the registry stops listing (a scale-down) gets no new request once the pool has read the list; what
    it had in flight finishes; every prompt is scored once, as by one endpoint alone."""
    caplog.set_level(logging.INFO, "rmbench_client")
    with FakeVllm("reward", "fake-reward").start() as alone:
        listed.now = [alone.url]
        assert run(reward_config(tmp_path, [alone.url]), data, tmp_path / "alone") == 0
    with (
        FakeVllm("reward", "fake-reward", delay=0.03).start() as a,
        FakeVllm("reward", "fake-reward", delay=0.03).start() as b,
    ):
        listed.now = [a.url, b.url]
        removed: list[int] = []

        def scale_down() -> None:
            listed.now = [a.url]
            reads = listed.reads
            while listed.reads <= reads + 1:  # the pool has read the shorter list
                time.sleep(0.01)
            removed.append(b.units)

        with when(lambda: scored(b) >= 15, scale_down):
            assert run(reward_config(tmp_path, [a.url]), data, tmp_path / "run") == 0, caplog.text[-2000:]
        assert removed and b.units <= removed[0] + 2  # at most the request in flight (concurrency 1) after it left
        assert a.units - a.probed + b.units - b.probed == 2 * PROMPTS  # each response asked once, none twice
    assert f"reward endpoint {b.url} is no longer listed: it leaves the pool" in caplog.text
    assert stored(tmp_path / "run") == 2 * PROMPTS
    assert samples(tmp_path / "run") == samples(tmp_path / "alone")


def test_a_source_read_that_fails_mid_run_keeps_the_last_list(listed, data, tmp_path, caplog):
    """A registry that cannot be read (or, for a cluster source, answers in part: it raises) never shrinks the
    pool: the last complete list stands, and both endpoints keep working."""
    with (
        FakeVllm("reward", "fake-reward", delay=0.02).start() as a,
        FakeVllm("reward", "fake-reward", delay=0.02).start() as b,
    ):
        listed.now = [a.url, b.url]
        with when(lambda: scored(a, b) >= 20, lambda: setattr(listed, "fail", True)):
            assert run(reward_config(tmp_path, [a.url]), data, tmp_path / "run") == 0
        after = [scored(a), scored(b)]
        assert all(n > 15 for n in after), after
    assert "cannot read the endpoint list (RuntimeError: the registry answered in part); the last one stands" in (
        caplog.text
    )


def test_a_source_that_ends_empty_ends_the_run_resumable(listed, data, tmp_path, capsys):
    with FakeVllm("reward", "fake-reward").start() as alone:
        listed.now = [alone.url]
        assert run(reward_config(tmp_path, [alone.url]), data, tmp_path / "alone") == 0
    patience = {"client": {"all_down_patience": 1.0, "max_retries": 100}}
    with FakeVllm("reward", "fake-reward", delay=0.02).start() as a:

        def lose_all() -> None:
            a.stop()
            listed.now = []

        listed.now = [a.url]
        started = time.monotonic()
        with when(lambda: scored(a) >= 20, lose_all):
            assert run(reward_config(tmp_path, [a.url], **patience), data, tmp_path / "run") == 1
        assert time.monotonic() - started < 15  # the patience (1 s), the ejection and the reads; never hangs
    assert "error: the reward endpoint list stayed empty for 1s (its source lists none)" in capsys.readouterr().err
    partial = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert 0 < partial["scored"] < PROMPTS
    kept = stored(tmp_path / "run")  # responses stored (a prompt's may have come in after the end: it is kept)
    with FakeVllm("reward", "fake-reward").start() as back:  # the cluster has room again: the run resumes
        listed.now = [back.url]
        assert run(reward_config(tmp_path, [a.url]), data, tmp_path / "run") == 0
        # what was missing, once, beside the probes of the start-up checks and of each new connection's check
        assert back.units - back.probed == 2 * PROMPTS - kept and back.probed >= len(FINGERPRINT_PROBES)
    assert stored(tmp_path / "run") == 2 * PROMPTS
    assert samples(tmp_path / "run") == samples(tmp_path / "alone")


@pytest.mark.parametrize("other", [{"root": "/models/another"}, {"shift": 0.5}])
def test_endpoints_that_disagree_at_start_are_one_error(other, data, tmp_path, capsys):
    """At start there is no reference but the endpoints themselves: two that serve different models stop the run."""
    with FakeVllm("reward", "fake-reward").start() as a, FakeVllm("reward", "fake-reward", **other).start() as b:
        assert run(reward_config(tmp_path, [a.url, b.url]), data, tmp_path / "run") == 2
        assert scored(a, b) <= 3  # the fingerprints, never a prompt
    (line,) = capsys.readouterr().err.strip().splitlines()[-1:]
    assert line.startswith("error: the reward endpoints serve different models: ")
    assert a.url in line or b.url in line
    assert not (tmp_path / "run" / C.SAMPLES_FILE).exists()


def test_a_reward_endpoint_on_the_generate_runner_names_the_flags(data, tmp_path, capsys):
    """The route check is admission's: alone at start it is one error naming the fix (as it was before)."""
    with FakeVllm("policy", "fake-reward").start() as a:
        assert run(reward_config(tmp_path, [a.url]), data, tmp_path / "run") == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line == (
        f"error: endpoint {a.url}: no /pooling route: vLLM serves this model with its generate runner; serve the "
        "reward model with --runner pooling --convert classify"
    )
