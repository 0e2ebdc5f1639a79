"""Servers that change under a run: a server swapped behind its URL (a load balancer that moves new connections, a
rolling update with SO_REUSEPORT, a restart), a load balancer that moves requests on open connections, a judge on
another vLLM release. A wrong server is never scored, a rejection is not an outage, and the run says what changed.
A fingerprinted role's new connections are checked by the fingerprint alone; a judge's read its release each.

Runs go through the CLI's `main` in this process, against loopback fakes of vLLM (fake_vllm.py) that answer as
vLLM 0.32 does; the "wrong" server serves the same name, path and max_model_len with its rewards negated (another
checkpoint saved over the same path), so only its fingerprint tells it apart.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from pathlib import Path

import pytest
from fake_vllm import FakeVllm
from helpers_cli import sample_lines, stored
from proxy import FaultProxy
from tcp_switch import TcpSwitch
from test_endpoint_join import PROMPTS, config, reward_config, run, samples, scored, when
from test_endpoint_join import data as data  # the same pairs file: the fixture, re-exported
from test_plugins import page_data

from rmbench_client import constants as C
from rmbench_client.cli import main

# servers change after so many requests: one prompt per request (test_endpoint_join.template_options)
pytestmark = pytest.mark.timeout(120)
GRACE = {"client": {"rejected_grace": 2.0}}  # the wait for the right server once every endpoint is rejected


@pytest.fixture
def alone(data: Path, tmp_path: Path) -> list[dict]:
    """The samples of an undisturbed run: what every disturbed run's lines must equal."""
    with FakeVllm("reward", "fake-reward").start() as good:
        assert run(reward_config(tmp_path, [good.url]), data, tmp_path / "alone") == 0
    return samples(tmp_path / "alone")


def summary(out: Path) -> dict:
    return json.loads((out / C.SUMMARY_FILE).read_text())


def never_scored(fake: FakeVllm) -> None:
    """The wrong server was asked (its identity checks), and answered nothing but the fingerprint probes."""
    assert fake.probed > 0, fake.paths[:10]
    assert fake.units == fake.probed, (fake.units, fake.probed)


@pytest.mark.slow
def test_a_server_swapped_behind_its_url_is_never_scored(alone, data, tmp_path, caplog):
    """A load balancer sends new connections to another server and drops the open ones (a restart behind the
    address): the client reconnects silently, the new connection's identity check finds another checkpoint, the
    endpoint is taken out, and the right server, back within the grace, is taken back. Nothing the wrong server
    said is scored; the run says what changed and is not complete; a rerun confirms it and sends no prompt."""
    caplog.set_level(logging.INFO, "rmbench_client")
    with (
        FakeVllm("reward", "fake-reward", delay=0.02).start() as good,
        FakeVllm("reward", "fake-reward", invert=True).start() as wrong,
        TcpSwitch(good.port) as lb,
    ):

        def swap() -> None:
            lb.switch(wrong.port, drop=True)
            deadline = time.monotonic() + 10
            while wrong.probed == 0 and time.monotonic() < deadline:  # its identity was checked, and refused
                time.sleep(0.01)
            time.sleep(0.3)
            lb.switch(good.port, drop=True)  # the right server is back behind the address

        with when(lambda: scored(good) >= 30, swap):
            code = run(reward_config(tmp_path, [lb.url], **GRACE), data, tmp_path / "run")
        assert code == 1, caplog.text[-3000:]
        never_scored(wrong)
        s = summary(tmp_path / "run")
        assert s["scored"] == PROMPTS and s["complete"] is False
        (change,) = s["changed"]
        assert f"reward endpoint {lb.url} changed during the run: " in change and "another probe fingerprint" in change
        assert "endpoint(s) changed during the run" in " ".join(s["partial"])
        assert samples(tmp_path / "run") == alone

        sent = good.units - good.probed
        assert run(reward_config(tmp_path, [lb.url]), data, tmp_path / "run") == 0  # the rerun: nothing changed
        assert good.units - good.probed == sent  # every prompt reused: what was stored came from the right server
    assert summary(tmp_path / "run")["complete"] is True
    assert samples(tmp_path / "run") == alone


@pytest.mark.slow
def test_a_rolling_update_with_so_reuseport_never_scores_the_new_server(alone, data, tmp_path, caplog, capsys):
    """A second server binds the same port (SO_REUSEPORT) and the kernel spreads new connections over both; then
    the first one goes. Each connection is checked over itself, so however the connections fall, the new server's
    answers are never scored; once it alone remains, the run ends after the short grace (not the outage patience),
    naming the rejection, never calling the endpoint down or the list empty."""
    port = FakeVllm("reward", "fake-reward").port
    with (
        FakeVllm("reward", "fake-reward", delay=0.05, port=port, reuse_port=True).start() as old,
        FakeVllm("reward", "fake-reward", invert=True, port=port, reuse_port=True) as new,
    ):

        def roll() -> None:
            new.start()
            time.sleep(1.0)  # both listen: new connections go to either
            old.stop()

        started = time.monotonic()
        with when(lambda: scored(old) >= 30, roll):
            code = run(reward_config(tmp_path, [old.url], **GRACE), data, tmp_path / "run")
        elapsed = time.monotonic() - started
        never_scored(new)
    assert code == 1 and elapsed < 60, (elapsed, caplog.text[-3000:])
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if x.startswith("error: "))
    assert line.startswith(f"error: every reward endpoint serves another model (for 2s): {old.url}: "), line
    assert "another probe fingerprint" in line and "down" not in line and "none" not in line
    s = summary(tmp_path / "run")
    assert s["complete"] is False and 30 <= s["scored"] < PROMPTS
    assert all(line in alone for line in samples(tmp_path / "run"))  # what was scored is the old server's

    with FakeVllm("reward", "fake-reward", port=port).start() as back:  # the right model again: the run resumes
        assert run(reward_config(tmp_path, [back.url]), data, tmp_path / "run") == 0
    assert samples(tmp_path / "run") == alone


@pytest.mark.slow
def test_a_load_balancer_that_moves_open_connections_is_found_at_the_end(alone, data, tmp_path, caplog):
    """A proxy that sends each request to the backend of the moment moves requests without a new connection: the
    check at the end of scoring finds the other server, every answer that endpoint gave in this run is held apart
    (kept in the store's `held_apart`, never read as a score), its prompts are failures naming it (the report
    groups them by endpoint) and are asked again by the next run; what the other endpoint answered alone stands."""
    with (
        FakeVllm("reward", "fake-reward", delay=0.01).start() as good,
        FakeVllm("reward", "fake-reward", invert=True).start() as wrong,
        FaultProxy(good.url) as proxy,
    ):

        def move() -> None:
            proxy.upstream = wrong.url

        with when(lambda: scored(good) >= PROMPTS // 2, move):
            code = run(reward_config(tmp_path, [good.url, proxy.url]), data, tmp_path / "run")
        assert code == 1, caplog.text[-3000:]
        out = tmp_path / "run"
        s = summary(out)
        assert s["complete"] is False and s["changed"], s
        assert any(proxy.url in said for said in s["changed"])
        assert all(line in alone for line in samples(out))  # no line holds what the other server said
        failures = [json.loads(x) for x in (out / C.FAILURES_FILE).read_text().splitlines()]
        assert failures and all(f["endpoint"] == proxy.url for f in failures)
        assert s["scored"] > 0 and s["scored"] + len(failures) == PROMPTS
        with sqlite3.connect(out / C.STORE_FILE) as db:
            (held,) = db.execute("SELECT COUNT(*) FROM held_apart").fetchone()
        assert held > 0 and stored(out) + held >= 2 * PROMPTS
        assert main(["report", str(out)]) == 0  # the page groups the failures by the endpoint they failed at
        (shown,) = page_data(out / C.REPORT_FILE)["runs"]
        assert shown["failed_by_endpoint"] == {proxy.url: len(failures)}

        proxy.upstream = good.url
        assert run(reward_config(tmp_path, [proxy.url]), data, out) == 0
    assert samples(out) == alone


# --- judges: one identity for admission and the store ---------------------------------------------------------


def judge_config(tmp_path: Path, urls: list[str], **extra: object) -> Path:
    return config(tmp_path, "judge", {"judge": urls}, **extra)


def chats(*fakes: FakeVllm) -> int:
    return sum(f.scored["/v1/chat/completions"] for f in fakes)


@pytest.mark.slow
def test_judge_endpoints_on_two_release_series_are_not_one_judge(data, tmp_path, capsys, caplog):
    """A judge's answers are stored per vLLM release series: two endpoints on 0.32 and 0.33 are refused together at
    start, and a 0.33 one joining late is left out, naming why; it answers nothing."""
    with (
        FakeVllm("policy", "fake-judge", version="0.32.0").start() as a,
        FakeVllm("policy", "fake-judge", version="0.33.0").start() as b,
    ):
        assert run(judge_config(tmp_path, [a.url, b.url]), data, tmp_path / "both") == 2
        line = capsys.readouterr().err.strip().splitlines()[-1]
        assert line.startswith("error: the judge endpoints serve different models: ") and "release series" in line
        assert chats(a, b) == 0
    with (
        FakeVllm("policy", "fake-judge", version="0.32.0", delay=0.01).start() as a,
        FakeVllm("policy", "fake-judge", version="0.33.0") as late,
    ):
        with when(lambda: chats(a) >= 10, late.start):
            assert run(judge_config(tmp_path, [a.url, late.url]), data, tmp_path / "run") == 0
        assert late.paths and chats(late) == 0
    assert f"judge endpoint {late.url} is left out: " in caplog.text and "release series" in caplog.text
    (answered,) = summary(tmp_path / "run")["answered_by"]
    assert answered == {"role": "judge", "url": a.url, "release": "0.32.0", "prompts": PROMPTS}


def test_every_release_that_answered_is_recorded_and_a_rerun_on_one_reuses_it(data, tmp_path):
    """Patch releases of one series are one judge for the store: both answer, the summary names both releases,
    and a rerun against either one alone asks nothing again."""
    with (
        FakeVllm("policy", "fake-judge", version="0.32.0", delay=0.01).start() as a,
        FakeVllm("policy", "fake-judge", version="0.32.1", delay=0.01).start() as b,
    ):
        assert run(judge_config(tmp_path, [a.url, b.url]), data, tmp_path / "run") == 0
        answered = summary(tmp_path / "run")["answered_by"]
        assert {(x["url"], x["release"]) for x in answered} == {(a.url, "0.32.0"), (b.url, "0.32.1")}
        assert sum(x["prompts"] for x in answered) >= PROMPTS
        lines = [json.loads(x) for x in (tmp_path / "run" / C.SAMPLES_FILE).read_text().splitlines()]
        assert all({y["release"] for y in line["answered_by"]} <= {"0.32.0", "0.32.1"} for line in lines)
        asked = chats(a, b)
        assert run(judge_config(tmp_path, [b.url]), data, tmp_path / "run") == 0
        assert chats(a, b) == asked  # every verdict reused, whichever release gave it


@pytest.mark.slow
def test_a_judge_upgraded_in_place_to_another_series_is_taken_out(data, tmp_path, caplog):
    """A judge restarted on 0.33 behind the same address is another judge for the store: the new connection's
    check refuses it and nothing it says is stored under 0.32's epoch."""
    with (
        FakeVllm("policy", "fake-judge", version="0.32.0", delay=0.01).start() as old,
        FakeVllm("policy", "fake-judge", version="0.33.0").start() as upgraded,
        TcpSwitch(old.port) as lb,
    ):
        with when(lambda: chats(old) >= 20, lambda: lb.switch(upgraded.port, drop=True)):
            code = run(judge_config(tmp_path, [lb.url], **GRACE), data, tmp_path / "run")
        assert code == 1
        assert chats(upgraded) == 0 and upgraded.paths.count("/version") > 0
    s = summary(tmp_path / "run")
    assert s["complete"] is False and "release series" in s["changed"][0] and "'0.33.0'" in s["changed"][0]
    assert {x["release"] for x in s["answered_by"]} == {"0.32.0"}


def test_a_fingerprinted_roles_connections_are_checked_by_the_fingerprint_and_release_alone(data, tmp_path):
    """A reward model's new connections (four here) are each checked by one fingerprint request and its release
    (what its answers are attributed to): its name and path are read once, when it is admitted; a judge's
    connections each read its name, path and release."""
    with FakeVllm("reward", "fake-reward").start() as reward:
        assert run(reward_config(tmp_path, [reward.url], concurrency=4), data, tmp_path / "r") == 0
    assert reward.paths.count("/v1/models") == 1  # at admission only
    assert reward.paths.count("/version") == 1 + 4 + 1  # admission, four connections, the end
    # one prompt per request: every /pooling request past them is a fingerprint (admission, four connections, the end)
    assert reward.scored["/pooling"] - PROMPTS == 1 + 4 + 1
    with FakeVllm("policy", "fake-judge").start() as judge:
        cfg = config(tmp_path, "judge", {"judge": [judge.url]}, concurrency=4, judge={"max_tokens": 4})
        assert run(cfg, data, tmp_path / "j") == 0
    assert judge.paths.count("/v1/models") == judge.paths.count("/version") == 1 + 4 + 1


def test_scores_from_two_releases_are_told_apart_and_can_be_kept_on_one_endpoint(data, tmp_path):
    """Two endpoints of one reward model on two vLLM releases, a prompt's two conversations sent apart (the server's
    template): each score names the endpoint and release that gave it (`units` of `answered_by`), a line whose pair
    was scored by both says `cross_release`, and the summary counts them. With `client.same_endpoint_per_prompt`,
    every prompt's scores come from one endpoint, both endpoints at work."""
    with (
        FakeVllm("reward", "fake-reward", version="0.32.0", delay=0.005).start() as a,
        FakeVllm("reward", "fake-reward", version="0.33.0", delay=0.005).start() as b,
    ):
        assert run(reward_config(tmp_path, [a.url, b.url], mode="server", concurrency=4), data, tmp_path / "r") == 0
        lines = sample_lines(tmp_path / "r", keep_answerers=True)
        crossed = [line for line in lines if line.get("cross_release")]
        assert crossed and summary(tmp_path / "r")["cross_release"] == len(crossed)
        for line in crossed:  # the chosen by one release, the rejected by the other
            assert sorted((x["release"], x["units"]) for x in line["answered_by"]) in (
                [("0.32.0", [0]), ("0.33.0", [1])], [("0.32.0", [1]), ("0.33.0", [0])])  # fmt: skip
        for line in lines:
            assert sorted(u for x in line["answered_by"] for u in x["units"]) == [0, 1]  # every score, once
        kept = {"client": {"endpoint_refresh": 0.2, "same_endpoint_per_prompt": True}}
        cfg = reward_config(tmp_path, [a.url, b.url], mode="server", concurrency=4, **kept)
        before = scored(a), scored(b)
        assert run(cfg, data, tmp_path / "kept") == 0
        assert scored(a) > before[0] and scored(b) > before[1]  # both at work
    kept_lines = sample_lines(tmp_path / "kept", keep_answerers=True)
    assert all(len(line["answered_by"]) == 1 and line["answered_by"][0]["units"] == [0, 1] for line in kept_lines)
    assert summary(tmp_path / "kept")["cross_release"] == 0 and not any("cross_release" in x for x in kept_lines)


def test_a_rolling_upgrade_of_a_reward_model_behind_one_url_is_recorded_as_it_happens(data, tmp_path):
    """A reward model's server upgraded behind its URL (the same weights on vLLM 0.33): the new connections' checks
    read the new release, the answers from then on are attributed to it, the run is complete (the same model), and
    the summary names both releases of the one URL."""
    with (
        FakeVllm("reward", "fake-reward", version="0.32.0", delay=0.005).start() as old,
        FakeVllm("reward", "fake-reward", version="0.33.0", delay=0.005).start() as upgraded,
        TcpSwitch(old.port) as lb,
    ):
        with when(lambda: scored(old) >= 40, lambda: lb.switch(upgraded.port, drop=True)):
            assert run(reward_config(tmp_path, [lb.url]), data, tmp_path / "run") == 0
        assert scored(upgraded) > 10
    answered = {x["release"]: x["prompts"] for x in summary(tmp_path / "run")["answered_by"]}
    assert set(answered) == {"0.32.0", "0.33.0"} and sum(answered.values()) >= PROMPTS
    releases = [{x["release"] for x in line["answered_by"]} for line in sample_lines(tmp_path / "run", True)]
    assert releases[0] == {"0.32.0"} and releases[-1] == {"0.33.0"}  # in order: the upgrade came mid-run


def test_a_prompt_kept_on_an_endpoint_that_dies_is_scored_again_whole_elsewhere(data, tmp_path, caplog):
    """With `client.same_endpoint_per_prompt`, an endpoint stopped mid-run: the prompts kept on it are scored again,
    whole, on the other (nothing of them stored before): every prompt scored, each by one endpoint, none failed."""
    caplog.set_level(logging.INFO, "rmbench_client")
    kept = {"client": {"endpoint_refresh": 0.2, "same_endpoint_per_prompt": True}}
    with (
        FakeVllm("reward", "fake-reward", delay=0.01).start() as a,
        FakeVllm("reward", "fake-reward", delay=0.01).start() as b,
    ):
        cfg = reward_config(tmp_path, [a.url, b.url], mode="server", concurrency=4, **kept)
        with when(lambda: scored(b) >= 40, b.stop):
            assert run(cfg, data, tmp_path / "run") == 0
    lines = sample_lines(tmp_path / "run", keep_answerers=True)
    assert len(lines) == PROMPTS and summary(tmp_path / "run")["failed"] == 0
    assert all(len(line["answered_by"]) == 1 for line in lines)
    assert {line["answered_by"][0]["url"] for line in lines} == {a.url, b.url}
    assert "scored again on another endpoint" in caplog.text
