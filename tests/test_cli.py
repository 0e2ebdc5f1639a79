"""The command line: runs from flags alone (no YAML), -v after the subcommand, `--dry-run`, `status`, and every flag
documented. Unit tests of the flag-to-config mapping; a real vLLM server for the runs."""

from __future__ import annotations

import argparse
import json
import os
import re
import ssl
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CpuServers
from fake_vllm import FakeVllm
from helpers_cli import CLI, cli, one_error_line, start_run, summary, wait_for_lines, write_config
from helpers_data import require_rmbench

from rmbench_client.cli import build_parser
from rmbench_client.cli.run import config
from rmbench_client.cli.status import status
from rmbench_client.config.loading import validated
from rmbench_client.config.schema import ClientOptions, RoleConfig
from rmbench_client.errors import ConfigError
from rmbench_client.model_kinds.factory import make_transport


def parse(*argv: str):
    return build_parser().parse_args(list(argv))


def test_flags_alone_make_a_reward_config():
    args = parse("run", "--endpoint", "http://h:1", "--endpoint", "http://h:2", "--served-model", "rm", "-vv")
    cfg = config(args)
    assert args.verbose == 2  # -v after the subcommand
    assert cfg.type == "reward" and cfg.model == "rm"  # named after the served model
    assert cfg.roles["reward"].endpoints == ["http://h:1", "http://h:2"] and cfg.roles["reward"].served_model == "rm"


def test_verbose_before_and_after_the_subcommand_add_up(tmp_path):
    """-v before the subcommand was lost: the subcommand's parser set the count back to its own."""
    counts = {("-vv", "status", "x"): 2, ("status", "x", "-v"): 1, ("-v", "status", "x", "-v"): 2, ("status", "x"): 0}
    assert {argv: parse(*argv).verbose for argv in counts} == counts
    data = str(require_rmbench())
    proc = cli("-v", "run", "--model", "baseline:longer", "--data", data, "--out", str(tmp_path / "r"), "--limit", "2")
    assert proc.returncode == 0 and "INFO rmbench_client" in proc.stderr, proc.stderr


def test_role_flags_imply_the_type_and_apply_to_every_role():
    args = parse(
        "run",
        "--policy-endpoint", "http://p:1",
        "--policy-model", "pi",
        "--reference-endpoint", "http://r:1",
        "--reference-model", "ref",
        "--concurrency", "3",
        "--judge-seed", "7",
    )  # fmt: skip
    cfg = config(args)
    assert cfg.type == "dpo" and cfg.model == "pi" and cfg.judge.seed == 7 and cfg.seed == 0
    assert {n: (r.served_model, r.concurrency) for n, r in cfg.roles.items()} == {
        "policy": ("pi", 3),
        "reference": ("ref", 3),
    }
    judge = config(parse("run", "--judge-endpoint", "http://j:1", "--served-model", "j", "--judge-order", "both",
                         "--judge-prompt", "reward-bench"))  # fmt: skip
    assert judge.type == "judge" and judge.roles["judge"].served_model == "j" and judge.judge.order == "both"
    assert judge.judge.prompt == "reward-bench"


def test_flags_override_a_config_file(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("model: m\nroles:\n  reward: {served_model: rm, endpoints: ['http://a:1'], concurrency: 4}\n")
    cfg = config(parse("run", "--config", str(path), "--endpoint", "http://b:1"))
    assert cfg.roles["reward"].endpoints == ["http://b:1"] and cfg.roles["reward"].concurrency == 4


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--endpoint", "http://h:1"], "no reward model to ask: add --served-model NAME"),
        (["--served-model", "rm"], "no reward model to ask: add --endpoint URL"),
        (["--judge-endpoint", "http://h:1"], "no judge model to ask: add --served-model NAME"),
        (["--policy-endpoint", "http://h:1", "--policy-model", "pi"],
         "no reference model to ask: add --reference-endpoint URL --reference-model NAME (or --dpo-reward sum"),
        (["--policy-endpoint", "http://h:1", "--reference-endpoint", "http://h:2", "--reference-model", "r"],
         "no policy model to ask: add --policy-model NAME"),
    ],
)  # fmt: skip
def test_a_role_missing_from_the_flags_names_the_flags_to_add(argv, line):
    with pytest.raises(ConfigError, match=re.escape(f"command line: {line}")):
        config(parse("run", *argv))
    config(parse("run", "--policy-endpoint", "http://h:1", "--policy-model", "pi", "--dpo-reward", "sum"))
    config(parse("run", "--model", "baseline:longer"))


def parsers(parser: argparse.ArgumentParser, name: str = "rmbench-client") -> list[tuple[str, argparse.ArgumentParser]]:
    """The parser and every subcommand's, recursively."""
    found = [(name, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                found += parsers(sub, f"{name} {sub_name}")
    return found


def test_every_flag_has_help_and_a_readable_metavar():
    for name, parser in parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            assert action.help, f"{name}: {action.option_strings or action.dest} has no help"
            takes_value = action.nargs != 0 and not isinstance(action, argparse.BooleanOptionalAction)
            if takes_value and action.choices is None:
                assert action.metavar, f"{name}: {action.option_strings or action.dest} has no metavar"


@pytest.mark.server
def test_a_run_from_flags_alone_dry_run_then_status(cpu_servers: CpuServers, fault_data: Path, tmp_path: Path):
    out = tmp_path / "run"
    flags = ["--endpoint", cpu_servers.urls["reward"], "--served-model", "tiny-reward", "--data", str(fault_data)]
    flags += ["--out", str(out), "--limit", "12"]
    plan = json.loads(cli("run", *flags, "--dry-run", "--json").stdout)
    assert plan["prompts"] == 12 and plan["units"] == 72 and plan["stored_units"] == 0
    assert plan["to_send"] <= 72 and not out.exists()  # nothing written

    proc = cli("run", *flags, "-v", "--no-progress")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "INFO" in proc.stderr  # -v after the subcommand
    assert summary(out)["model"] == "tiny-reward" and summary(out)["scored"] == 12

    again = json.loads(cli("run", *flags, "--dry-run", "--json").stdout)
    assert again["stored_prompts"] == 12 and again["to_send"] == 0 and again["stored_units"] == plan["to_send"]
    more = json.loads(cli("run", *flags[:-1], "20", "--dry-run", "--json").stdout)
    assert more["stored_prompts"] == 12 and more["pending_prompts"] == 8

    found = status(out)
    assert found["state"] == "not running" and found["scored"] == 12 and found["complete"] is False
    assert any(r.startswith("--limit 12") for r in found["partial"])
    text = subprocess.run([CLI, "status", str(out)], capture_output=True, text=True)
    assert text.returncode == 0 and "scored 12 of 12 prompts, 0 failed" in text.stdout and "partial:" in text.stdout
    assert "tiny-reward on rm-bench — partial" in text.stdout  # the table, once the run has ended


@pytest.mark.server
def test_status_of_a_running_run(cpu_servers: CpuServers, fault_data: Path, tmp_path: Path):
    out = tmp_path / "run"
    config_file = write_config(tmp_path / "c.yaml", [cpu_servers.urls["reward"]])
    run = start_run(config_file, fault_data, out, "--limit", "100")
    try:
        wait_for_lines(out, 5, run)
        found = status(out)
        assert found["state"] == "running" and found["pid"] == run.pid and found["scored"] >= 5
    finally:
        run.terminate()
        run.communicate(timeout=60)
    assert status(out)["state"] == "not running" and status(out)["aborted"] == "interrupted by SIGTERM"


def test_an_unset_api_key_env_is_an_error_never_a_fallback(tmp_path, monkeypatch):
    monkeypatch.setenv("RMBENCH_API_KEY", "sk-general-key")  # must not be sent in place of the role's own key
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    path = tmp_path / "c.yaml"
    role = "{served_model: rm, endpoints: ['http://127.0.0.1:9'], api_key_env: NO_SUCH_KEY_VAR}"
    path.write_text(f"model: m\nroles:\n  reward: {role}\n")
    proc = cli("run", "--config", str(path), "--data", str(require_rmbench()), "--out", str(tmp_path / "out"))
    line = one_error_line(proc, 2, "role reward", "NO_SUCH_KEY_VAR", "not set")
    assert "sk-general-key" not in line


@pytest.mark.parametrize("when", ["start", "scoring"])
def test_a_key_a_server_echoes_is_never_written(tmp_path, monkeypatch, when):
    """A server (or a proxy) whose error text repeats the request's Authorization header: the key is masked in the
    error line, failures.jsonl and every other file of the run."""
    key = "sk-echoed-secret-123456"
    monkeypatch.setenv("RMBENCH_API_KEY", key)
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps({"id": f"p{i}", "prompt": f"q {i}?", "chosen": "yes", "rejected": "no"}) + "\n"
                            for i in range(3)))  # fmt: skip
    out = tmp_path / "out"
    with FakeVllm("reward", "rm", echo_key=when).start() as fake:
        proc = cli("run", "--benchmark", "pairwise", "--endpoint", fake.url, "--served-model", "rm", "--data",
                   str(data), "--out", str(out), "--no-progress")  # fmt: skip
    assert proc.returncode != 0 and "Bearer <secret>" in proc.stderr, proc.stderr[-2000:]
    written = [p for p in out.rglob("*") if p.is_file()]
    if when == "scoring":  # each prompt failed with the server's words, recorded
        failures = (out / "failures.jsonl").read_text()
        assert failures.count("Bearer <secret>") == 3
    assert all(key.encode() not in p.read_bytes() for p in written) and key not in proc.stderr + proc.stdout


def test_tls_verification_is_per_role():
    strict = RoleConfig(served_model="a", endpoints=["https://a.test"])
    lax = RoleConfig(served_model="b", endpoints=["https://b.test"], verify_tls=False)
    modes = {}
    for name, role in (("strict", strict), ("lax", lax)):
        transport = make_transport(role, ClientOptions())
        assert transport is not None
        modes[name] = transport.ssl_context().verify_mode
    assert modes == {"strict": ssl.CERT_REQUIRED, "lax": ssl.CERT_NONE}


def test_a_json_run_imports_no_table_library_and_no_pydantic(tmp_path):
    """What a `run --json` does not need is never imported (the fixed cost of a run): rich (tables), httpx's own
    command line (click, pygments) and pydantic."""
    data = require_rmbench()
    script = (
        "import json, sys\n"
        "from rmbench_client.cli import main\n"
        f"code = main(['run', '--model', 'baseline:longer', '--data', {str(data)!r}, '--out', {str(tmp_path)!r},"
        " '--limit', '2', '--json', '--no-heatmaps'])\n"
        "sys.stderr.write(json.dumps([code, sorted(m for m in ('rich', 'click', 'pygments', 'pydantic')"
        " if m in sys.modules)]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    code, loaded = json.loads(proc.stderr.strip().splitlines()[-1])
    assert code == 0 and json.loads(proc.stdout)["scored"] == 2
    assert loaded == []


@pytest.mark.parametrize(("user_setting", "inside"), [(None, 1), ("2", 2)])
def test_the_client_scores_on_one_blas_thread_unless_the_user_chose(user_setting, inside):
    """OpenBLAS's worker threads spin after every call; the client's matrix work is small, so they only burn CPU.
    The limit holds in the block (nested blocks too) and nowhere else; no variable is set; another thread than the
    main one (the API's async forms) leaves the process's setting alone."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if user_setting:
        env["OPENBLAS_NUM_THREADS"] = user_setting
    script = (
        "import json, os, threading, numpy\n"
        "from threadpoolctl import threadpool_info\n"
        "from rmbench_client.blas_threads import few_blas_threads\n"
        "def blas(): return [i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas']\n"
        "def in_thread():\n"
        "    with few_blas_threads():\n"
        "        seen.append(blas())\n"
        "before, seen = blas(), []\n"
        "with few_blas_threads():\n"
        "    with few_blas_threads():\n"
        "        pass\n"
        "    seen.append(blas())\n"
        "t = threading.Thread(target=in_thread); t.start(); t.join()\n"
        "print(json.dumps([before, *seen, blas(), os.environ.get('OPENBLAS_NUM_THREADS')]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    before, in_block, in_thread, after, variable = json.loads(proc.stdout)
    assert before and in_block == [inside] * len(before) and in_thread == after == before
    assert variable == user_setting


@pytest.mark.parametrize(
    ("data", "line"),
    [
        ({"colour": "blue"}, "c.yaml: colour: unknown key"),
        ({"roles": {"reward": {"served_model": "rm", "endpoints": []}}}, "c.yaml: roles.reward.endpoints: Expected"),
        ({"roles": {"reward": {"endpoints": ["http://h:1"]}}}, "c.yaml: roles.reward.served_model: Object missing"),
        ({"roles": {"reward": {"served_model": "rm", "endpoints": ["ftp://h"]}}}, "c.yaml: roles.reward: endpoint"),
        ({"client": {"read_timeout": 0}}, "c.yaml: client.read_timeout: Expected `float` > 0.0"),
        ({"roles": {"rewards": {}}}, "c.yaml: roles: Invalid enum value 'rewards'"),
    ],
)
def test_a_bad_config_value_is_one_line_naming_the_key(data, line):
    """msgspec names no mapping key and marks unknown fields its own way: the line still says which key is wrong."""
    with pytest.raises(ConfigError) as err:
        validated({"model": "m", **data}, "c.yaml")
    assert str(err.value).startswith(line) and "\n" not in str(err.value)


def test_help_and_the_package_description_name_every_benchmark():
    """--help names every benchmark of the registry (built from it); the package description, static, is checked
    against it."""
    import tomllib

    from rmbench_client.benchmarks import registry as benchmarks

    help_text = " ".join(build_parser().format_help().split())
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    description = tomllib.loads(pyproject.read_text())["project"]["description"]
    for bench in benchmarks.benchmarks():
        assert bench.title and bench.title in help_text and bench.title in description, bench.name
