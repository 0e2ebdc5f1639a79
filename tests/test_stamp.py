"""Every result stamped (results/stamp.py): `summary.json`, `suite.json`, the API's results name the client's version,
the Python, the libraries that can change a number, when, and the command line or API call with its config; and
nothing secret is in a stamp, in config.yaml or anywhere in the run directory (an endpoint's credentials, a server
flag's key). The report page shows the stamp: test_leaderboard_page.py."""

from __future__ import annotations

import asyncio
import datetime
import json
import platform
import shlex
from pathlib import Path

import numpy as np
import pytest
import yaml
from helpers_cli import cli
from helpers_data import require_rmbench

import rmbench_client as rmb
from rmbench_client.redaction import MASK, masked, masked_args, masked_url, secret_name

SECRET = "hunter2-secret-pw"
KEY = "sk-live-0123456789abcdef"


def test_urls_flags_and_configs_are_masked_and_names_of_variables_kept():
    assert masked_url(f"https://me:{SECRET}@h.example:8443/x?token={KEY}&model=m&sig=abc") == (
        f"https://{MASK}@h.example:8443/x?token={MASK}&model=m&sig={MASK}"
    )
    assert masked_url("http://127.0.0.1:8000") == "http://127.0.0.1:8000"
    assert masked_args(["--api-key", KEY, f"--hf-token={KEY}", "--api-key-env", "MY_KEY", "--max-num-batched-tokens",
                        "8192", "--endpoint", f"http://u:{SECRET}@h:1"]) == [
        "--api-key", MASK, f"--hf-token={MASK}", "--api-key-env", "MY_KEY", "--max-num-batched-tokens", "8192",
        "--endpoint", f"http://{MASK}@h:1"]  # fmt: skip
    data = {"prm": {"good_token": "+"}, "roles": {"reward": {"endpoints": [f"http://u:{SECRET}@h:1"],
            "api_key_env": "MY_KEY", "serve": {"extra_args": ["--api-key", KEY, "--dtype", "float32"]}}}}  # fmt: skip
    hidden = masked(data)
    assert SECRET not in json.dumps(hidden) and KEY not in json.dumps(hidden)
    assert hidden["prm"] == {"good_token": "+"} and hidden["roles"]["reward"]["api_key_env"] == "MY_KEY"
    assert hidden["roles"]["reward"]["serve"]["extra_args"] == ["--api-key", MASK, "--dtype", "float32"]
    assert [secret_name(n) for n in ("access_token", "X-Api-Key", "--password", "api_key_env", "max_tokens")] == [
        True, True, True, False, False]  # fmt: skip


def test_a_command_line_run_records_what_made_it_and_no_secret(tmp_path: Path):
    data = require_rmbench() / "chat_filtered.json"
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"model": "baseline:longer", "roles": {"reward": {
        "served_model": "rm", "endpoints": [f"http://reader:{SECRET}@127.0.0.1:9"],
        "serve": {"path": "m", "extra_args": ["--api-key", KEY]}}}}))  # fmt: skip
    args = ["run", "--config", str(config), "--data", str(data), "--out", "run", "--limit", "3", "--no-heatmaps",
            "--endpoint", f"http://reader:{SECRET}@127.0.0.1:9", "--served-model", "rm"]  # fmt: skip
    before = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    proc = cli(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    stamp = json.loads((tmp_path / "run" / "summary.json").read_text())["stamp"]
    assert list(stamp) == ["version", "python", "libraries", "written", "command", "config"]
    assert stamp["version"] == rmb.__version__ == cli("--version").stdout.split()[1]
    assert stamp["python"] == f"{platform.python_version()} ({platform.python_implementation()})"
    assert stamp["libraries"] == {"numpy": np.__version__}  # a baseline renders no template
    assert before <= datetime.datetime.fromisoformat(stamp["written"]) <= datetime.datetime.now(datetime.UTC)
    masked_args_ = [*args[:-3], f"http://{MASK}@127.0.0.1:9", "--served-model", "rm"]
    assert stamp["command"] == shlex.join(["rmbench-client", *masked_args_])
    config_ = stamp["config"]
    assert (config_["data"], config_["out"], config_["limit"]) == (str(data), str(tmp_path / "run"), 3)
    assert config_["roles"]["reward"]["endpoints"] == [f"http://{MASK}@127.0.0.1:9"]
    assert config_["roles"]["reward"]["serve"]["extra_args"] == ["--api-key", MASK]
    assert yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["roles"] == config_["roles"]
    for path in (tmp_path / "run").iterdir():
        assert SECRET.encode() not in path.read_bytes() and KEY.encode() not in path.read_bytes(), path.name


def test_an_api_call_is_recorded_on_the_callers_thread_on_a_loops_and_on_its_own(tmp_path: Path):
    """evaluate from plain code, from inside a running loop (the run on a thread of its own) and evaluate_async
    (on a thread too): each result names its call; a result read back has the same stamp."""
    data = require_rmbench() / "chat_filtered.json"
    config = {"model": "baseline:random"}
    plain = rmb.evaluate(config, data=data, out=tmp_path / "a", limit=2)
    assert isinstance(plain.stamp, rmb.Stamp) and plain.stamp.call == (
        f"rmbench_client.evaluate(<dict>, data={str(data)!r}, out={str(tmp_path / 'a')!r}, limit=2)"
    )
    assert plain.stamp.config["model"] == "baseline:random" and rmb.load_result(tmp_path / "a").stamp == plain.stamp

    async def in_a_loop() -> tuple[rmb.BenchmarkResult, rmb.BenchmarkResult]:
        inside = rmb.evaluate(config, data=data, out=tmp_path / "b", limit=2)
        awaited = await rmb.evaluate_async(str(_yaml(tmp_path, config)), data=data, out=tmp_path / "c", limit=2)
        return inside, awaited

    inside, awaited = asyncio.run(in_a_loop())
    assert inside.stamp is not None and inside.stamp.call.startswith("rmbench_client.evaluate(<dict>, ")
    assert awaited.stamp is not None and awaited.stamp.call.startswith(
        f"rmbench_client.evaluate_async({str(tmp_path / 'c.yaml')!r}, "
    )


def _yaml(tmp_path: Path, config: dict) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_suite_stamps_its_table_and_each_cell_names_its_runs_version(tmp_path: Path):
    root = tmp_path / "data" / "rm-bench"
    root.mkdir(parents=True)
    (root / "chat_filtered.json").symlink_to(require_rmbench() / "chat_filtered.json")
    suite = rmb.evaluate_suite({"model": "baseline:longer"}, data_root=tmp_path / "data", out=tmp_path / "s",
                               limit=2, benchmarks=["rm-bench"])  # fmt: skip
    table = json.loads((tmp_path / "s" / "suite.json").read_text())
    assert table["stamp"]["call"].startswith("rmbench_client.evaluate_suite(<dict>, benchmarks=['rm-bench'], ")
    assert table["stamp"]["config"]["model"] == "baseline:longer" and suite.stamp == rmb.Stamp(**table["stamp"])
    assert table["results"]["rm-bench"]["version"] == rmb.__version__
    result = suite.results["rm-bench"]
    assert result.stamp is not None and result.stamp.call == table["stamp"]["call"]  # what made the suite made it
    assert result.stamp.config["out"] == str(tmp_path / "s" / "rm-bench")


@pytest.mark.parametrize("prompt", ["project", "reward-bench"])
def test_the_libraries_are_those_that_can_change_this_runs_numbers(prompt):
    from rmbench_client.config.loading import config_of
    from rmbench_client.results.stamp import libraries

    judge = config_of({"model": "j", "type": "judge", "judge": {"prompt": prompt},
                       "roles": {"judge": {"served_model": "j", "endpoints": ["http://h:1"]}}}, {}, "test")  # fmt: skip
    found = libraries(judge, {"models": {"judge": {"served": {}}}})
    assert set(found) == {"numpy", "rewardbench"} if prompt == "reward-bench" else set(found) == {"numpy"}
    rendered = libraries(None, {"template": {"mode": "text", "digest": "ab12"}})
    assert set(rendered) == {"numpy", "jinja2"} and set(libraries(None, {"template": {"digest": None}})) == {"numpy"}
