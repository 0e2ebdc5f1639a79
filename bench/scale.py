"""The client's own costs where the server is fast (bench/run.py): P4's tiny-model runs and P7 (client CPU per
sequence, reward and DPO, profiled with cProfile), P8 (one client on 1, 4, 16 and 64 simulated GPU endpoints,
bench/sim_server.py), P9 (peak RSS of the client as its own process: a full RM-Bench DPO run and a large
generated pairwise dataset) and P10 (CPU of a one-prompt run of the command line: the fixed cost per run)."""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import constants as B
import yaml
from harness import DATA_DIR, QUICK, ROOT, SERVER_PY, TINY_MODELS, WORK, client_run, config, log, servers
from measure import Sample, measure

from rmbench_client.backends import vllm as vllm_backend
from rmbench_client.benchmarks.rm_bench.data import files_in
from rmbench_client.benchmarks.shared.records import read_records
from rmbench_client.config.schema import RunConfig
from rmbench_client.run import event_loop

CLIENT = ROOT / ".venv" / "bin" / "rmbench-client"
SIM_TEMPLATE = (  # the simulated endpoints' chat template (bench/sim_server.py `render`)
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}</s>{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)


def tiny_models() -> None:
    subprocess.run([str(SERVER_PY), "servers/build_models.py", "--size", "tiny", "--out", str(TINY_MODELS)],
                   cwd=ROOT, check=True)  # fmt: skip


def profiled(name: str, fn: Any) -> Any:
    """`fn()` under cProfile; the 30 costliest functions (own time) go to runs/bench/profile-<name>.txt."""
    prof = cProfile.Profile()
    value = prof.runcall(fn)
    with open(WORK / f"profile-{name}.txt", "w") as out:
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(30)
    return value


def measured_tiny(cfg: RunConfig, key: str, profile: str, pgids: list[int], add: Any) -> None:
    """A warm-up of two prompts, the measured run, then its first QUICK_SCALE_PROMPTS under cProfile."""
    client_run(cfg.replace(limit=2, out=str(Path(cfg.out).with_name(Path(cfg.out).name + "-warmup"))))
    sample, phases = measure(lambda: client_run(cfg), pgids)
    add(key, sample, **phases)
    profiled(profile, lambda: client_run(cfg.replace(limit=B.QUICK_SCALE_PROMPTS)))


def tiny_runs(add: Any) -> None:
    """Every prompt with the tiny models (the first QUICK_SCALE_PROMPTS in a quick run): reward on one endpoint,
    DPO on two; measured, then the first QUICK_SCALE_PROMPTS once more under cProfile (the profile is written, the
    timing kept from the measured run)."""
    tiny_models()
    limit = B.QUICK_SCALE_PROMPTS if QUICK else None
    reward = config("reward", DATA_DIR, "client-reward-tiny-scale", [B.PORTS[5]], limit=limit, models=TINY_MODELS)
    with servers(reward) as started:
        measured_tiny(reward, "p4_scale_client_tiny", "reward-tiny", [s.pid for s in started], add)
    dpo = config("dpo", DATA_DIR, "client-dpo-tiny-scale", list(B.PORTS[1:3]), limit=limit, models=TINY_MODELS)
    with servers(dpo) as started:
        measured_tiny(dpo, "p7_dpo_client_tiny", "dpo-tiny", [s.pid for s in started], add)
        peak, cpu = cli_run(dpo, "p9-dpo")
        add("p9_client_dpo_process", Sample(0.0, cpu, 0.0, 0.0, 0.0), peak_rss_mb=peak)
        one = config("dpo", DATA_DIR, "client-dpo-tiny-one", list(B.PORTS[1:3]), limit=1, models=TINY_MODELS)
        peak, cpu = cli_run(one, "p10-one-prompt", ["--no-heatmaps"])  # reports only where asked
        add("p10_client_one_prompt", Sample(0.0, cpu, 0.0, 0.0, 0.0), peak_rss_mb=peak)


def cli_run(cfg: RunConfig, name: str, extra: list[str] | None = None) -> tuple[float, float]:
    """`rmbench-client run` in its own process: (peak RSS in MB, CPU seconds)."""
    path = WORK / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg.to_data(exclude_none=True)), encoding="utf-8")
    cmd = [str(CLIENT), "run", "--config", str(path), "--fresh", "--no-progress", "--json", *(extra or [])]
    with open(WORK / f"{name}.log", "wb") as logfile:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=logfile, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{shlex_join(cmd)} exited {proc.returncode}; see {WORK / (name + '.log')}")
    return usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def shlex_join(cmd: list[str]) -> str:
    import shlex

    return shlex.join(cmd)


# --- P8: simulated endpoints ------------------------------------------------------------------------------------


def sim_data(copies: int) -> Path:
    """The RM-Bench files, each prompt `copies` times over (made distinct), for a sustained run."""
    out = WORK / f"sim-data-{copies}"
    out.mkdir(parents=True, exist_ok=True)
    for f in files_in(DATA_DIR):
        records = read_records(f)
        many = [
            {**r, "id": f"{r['id']}-{k}", "prompt": f"{r['prompt']} ({k})" if k else r["prompt"]}
            for k in range(copies)
            for r in records
        ]
        (out / f.name).write_text(json.dumps(many, ensure_ascii=False), encoding="utf-8")
    return out


@contextmanager
def sim_endpoints(n: int) -> Iterator[list[str]]:
    base = int(os.environ.get("BENCH_SIM_PORT_BASE") or B.SIM_PORT_BASE)
    ports = [base + i for i in range(n)]
    cmd = [sys.executable, str(ROOT / "bench" / "sim_server.py"), "--ports", ",".join(map(str, ports))]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, cwd=ROOT)
    try:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != b"ready":
            raise RuntimeError(f"{shlex_join(cmd)} did not start")
        yield [f"http://127.0.0.1:{p}" for p in ports]
    finally:
        proc.terminate()
        proc.wait(10)


def sim_config(urls: list[str], data: Path) -> RunConfig:
    template = WORK / "sim-template.jinja"
    template.write_text(SIM_TEMPLATE, encoding="utf-8")
    return RunConfig.from_data(
        {
            "model": "sim-reward",
            "type": "reward",
            "data": str(data),
            "out": str(WORK / f"client-sim-{len(urls)}"),
            "roles": {"reward": {"served_model": "sim-reward", "endpoints": urls}},
            "reward": {"template": str(template)},
        }
    )


class QueueShare:
    """Each scoring request's time as the client sees it (from the backend's call, the endpoint slot already
    held, to the decoded answer) against the time the simulated server held it (`sim_service_s`)."""

    def __init__(self) -> None:
        self.total = 0.0
        self.server = 0.0
        self.requests = 0
        self._saved = vllm_backend.request_json

    def __enter__(self) -> QueueShare:
        saved = self._saved

        async def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            body = await saved(*args, **kwargs)
            if isinstance(body, dict) and "sim_service_s" in body:
                self.total += time.perf_counter() - t0
                self.server += body["sim_service_s"]
                self.requests += 1
            return body

        vllm_backend.request_json = timed  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        vllm_backend.request_json = self._saved  # type: ignore[assignment]

    def share(self) -> float:
        return (self.total - self.server) / self.total if self.total else 0.0


def sim_runs(add: Any) -> None:
    """P8: one client on 1, 4, 16 and 64 simulated endpoints; at 64 also with B.SIM_WORKERS worker processes, and
    with B.SIM_LARGE_REQUESTS texts a request.
    Besides the rate, the client's CPU per sequence sent: the whole run in this process (loading the data, the
    start-up checks, scoring, the outputs; the workers' CPU added where there are workers) and scoring alone.
    CPU per sequence does not depend on how busy the machine is, as a rate does."""
    data = sim_data(B.SIM_QUICK_COPIES if QUICK else B.SIM_COPIES)
    for n in B.SIM_ENDPOINTS:
        with sim_endpoints(n) as urls:
            cfg = sim_config(urls, data)
            client_run(cfg.replace(limit=4, out=str(WORK / "client-sim-warmup")))
            with QueueShare() as q:
                sample, phases = measure(lambda cfg=cfg: client_run(cfg))
            sim_sample(add, f"p8_sim_{n}_endpoints", sample, phases, client_queue_share=round(q.share(), 4),
                       requests=q.requests)  # fmt: skip
            if n == max(B.SIM_ENDPOINTS) and B.SIM_WORKERS > 1:
                many = cfg.replace(client=cfg.client.replace(workers=B.SIM_WORKERS))
                sample, phases = measure(lambda many=many: client_run(many))
                sim_sample(add, f"p8_sim_{n}_endpoints_{B.SIM_WORKERS}_workers", sample, phases)
            if n == max(B.SIM_ENDPOINTS):
                large = cfg.replace(reward=cfg.reward.replace(texts_per_request=B.SIM_LARGE_REQUESTS))
                with QueueShare() as q:
                    sample, phases = measure(lambda large=large: client_run(large))
                sim_sample(add, f"p8_sim_{n}_endpoints_{B.SIM_LARGE_REQUESTS}_texts", sample, phases,
                           client_queue_share=round(q.share(), 4), requests=q.requests)  # fmt: skip


def sim_sample(add: Any, key: str, sample: Sample, phases: dict[str, Any], **extra: Any) -> None:
    sent = phases["sent"]
    workers = sample.child_cpu_s  # the workers are this process's children, and they only score
    cpu = sample.client_cpu_s + workers
    rate = sent / phases["scoring_s"]
    add(key, sample, **phases, **extra, sequences_per_s=round(rate, 1),
        cpu_ms_per_sequence=round(1000 * cpu / sent, 4),
        scoring_cpu_ms_per_sequence=round(1000 * (phases["scoring_cpu_s"] + workers) / sent, 4),
        event_loop=event_loop.name(), loadavg=os.getloadavg())  # fmt: skip
    log.info("P8 %s: %.0f sequences/s, %.4f ms of client CPU per sequence (%.1f %% of request time in the client)",
             key, rate, 1000 * cpu / sent, 100 * extra.get("client_queue_share", float("nan")))  # fmt: skip


# --- P9: a large pairwise dataset ----------------------------------------------------------------------------------


def pairwise_data(prompts: int) -> Path:
    """A JSONL pairwise dataset of `prompts` records built from RM-Bench's texts (distinct prompts)."""
    path = WORK / f"pairwise-{prompts}.jsonl"
    if path.exists():
        return path
    rng = random.Random(0)
    pool = [r for f in files_in(DATA_DIR) for r in read_records(f)]
    with path.open("w", encoding="utf-8") as out:
        for i in range(prompts):
            r = pool[rng.randrange(len(pool))]
            rec = {"id": f"p{i}", "prompt": f"{r['prompt']} #{i}", "chosen": rng.choice(r["chosen"]),
                   "rejected": rng.choice(r["rejected"]), "subset": r.get("subset") or "default"}  # fmt: skip
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return path


def pairwise_memory(add: Any) -> None:
    """Peak RSS of the command line scoring the generated pairwise dataset on 16 simulated endpoints."""
    prompts = B.PAIRWISE_QUICK_PROMPTS if QUICK else B.PAIRWISE_PROMPTS
    data = pairwise_data(prompts)
    with sim_endpoints(16) as urls:
        cfg = sim_config(urls, data).replace(benchmark="pairwise", out=str(WORK / "client-pairwise"))
        t0 = time.perf_counter()
        peak, cpu = cli_run(cfg, "p9-pairwise")
        wall = time.perf_counter() - t0
    add("p9_client_pairwise_process", Sample(wall, cpu, 0.0, 0.0, 0.0), peak_rss_mb=peak, prompts=prompts)
