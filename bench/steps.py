"""The measurements of P1-P5: each repetition's client runs, offline engines and baselines (bench/run.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import constants as B
from harness import (
    CORES,
    MAX_MODEL_LEN,
    MODELS,
    REPEATS,
    SERVER_THREADS,
    WORK,
    client_run,
    client_scores,
    config,
    cores,
    log,
    max_abs_diff,
    median,
    naive_run,
    servers,
    subprocess_step,
    subprocess_steps,
)
from measure import Sample, measure, thread_affinities

from rmbench_client.examples import Example


class Bench:
    def __init__(self, examples: list[Example], pairs: list[tuple[str, str]]) -> None:
        self.examples = examples
        self.pairs = pairs
        self.halves = [pairs[0::2], pairs[1::2]]  # alternate sequences: two halves of about equal length
        self.half_files = [WORK / f"pairs-half{i}.json" for i in range(2)]
        for path, half in zip(self.half_files, self.halves, strict=True):
            path.write_text(json.dumps(half, ensure_ascii=False), encoding="utf-8")
        self.raw: dict[str, list[dict[str, Any]]] = {}
        self.info: dict[str, Any] = {}
        self.checks: dict[str, Any] = {}

    def add(self, key: str, sample: Sample, **extra: Any) -> None:
        sample.extra.update(extra)
        self.raw.setdefault(key, []).append(sample.as_dict())
        log.info("%-22s rep %d: %.2f s (client cpu %.2f s, server cpu %.2f s, background %.2f cores)", key,
                 len(self.raw[key]), sample.wall_s, sample.client_cpu_s, sample.server_cpu_s,
                 sample.other_cpu_s / sample.wall_s if sample.wall_s else 0.0)  # fmt: skip

    def walls(self, key: str) -> list[float]:
        return [r["wall_s"] for r in self.raw[key]]

    def med(self, key: str) -> float:
        return median(self.walls(key))

    def offline(self, key: str, args: list[str], threads: int) -> dict[str, Any]:
        """One timed pass of a .venv-server step (a fresh process: load and warm-up are not timed)."""
        sample, res = measure(lambda: subprocess_step(key, [*args, "--repeats", "1"], threads))
        keys = ("tokens", "load_s", "warmup_s", "tokenize_s", "torch_threads", "minor_faults")
        info = {k: res[k] for k in keys if k in res}
        self.info.setdefault(key, []).append({**info, **sample.extra})
        # background CPU is only known for the whole subprocess: shared out in proportion to the timed pass
        wall, cpu = res["times_s"][0], res["process_cpu_s"][0]
        res["sample"] = Sample(wall, 0.0, 0.0, cpu, sample.other_cpu_s * wall / sample.wall_s)
        return res

    # P1, P2, P5 --------------------------------------------------------------------------------------------------
    def reward_two_endpoints(self, data: Path) -> None:
        """P1: the client on two endpoints, one server per core: what it reaches on this machine."""
        ports = list(B.PORTS[3:5])
        cfg = config("reward", data, "client-reward", ports)
        with servers(cfg) as started:
            self.info["p1_server_thread_affinity"] = {s.url: thread_affinities(s.pid) for s in started}
            for s in started:  # each endpoint's first request (vLLM warms up on it)
                naive_run(s.url, [("Hello?", "Hi.")])
            client_run(config("reward", data, "client-reward-warmup", ports, limit=2))  # imports, connections
            sample, phases = measure(lambda: client_run(cfg), [s.pid for s in started])
            self.add("p1_client_reward", sample, **phases)
        if not hasattr(self, "client_reward"):
            scores = client_scores(cfg, self.examples)
            self.client_reward = [scores[p] for p in self.pairs]

    def reward_one_endpoint(self, data: Path) -> None:
        """P5's baseline (the same client on one of those servers), and P2's naive client on that server."""
        cfg = config("reward", data, "client-reward-1ep", [B.PORTS[0]])
        with servers(cfg) as started:
            pgids = [s.pid for s in started]
            url = started[0].url
            naive_run(url, self.pairs[:1])
            client_run(config("reward", data, "client-reward-1ep-warmup", [B.PORTS[0]], limit=2))
            sample, phases = measure(lambda: client_run(cfg), pgids)
            self.add("p5_client_1endpoint", sample, **phases)
            sample, naive = measure(lambda: naive_run(url, self.pairs), pgids)
            self.add("p2_naive_client", sample)
        self.checks["naive_vs_client_max_abs_diff"] = max_abs_diff(naive, self.client_reward)

    def reward_offline(self, pairs_file: Path, threads: int, key: str) -> None:
        """vLLM's offline engine over every sequence with `threads` threads (P1's limit)."""
        args = ["bench/offline.py", "--mode", "reward", "--model", str(MODELS / "reward"), "--input", str(pairs_file)]
        res = self.offline(key, [*args, "--max-model-len", str(MAX_MODEL_LEN)], threads)
        self.add(key, res["sample"])
        self.checks[f"{key}_vs_client_max_abs_diff"] = max_abs_diff([v[0] for v in res["values"]], self.client_reward)

    def hf_pipeline(self, pairs_file: Path) -> None:
        args = ["bench/hf_pipeline.py", "--model", str(MODELS / "reward"), "--input", str(pairs_file)]
        res = self.offline("p2_hf_pipeline", args, len(CORES))
        self.info["p2_hf_pipeline"][-1].update(
            {k: res[k] for k in ("padded_tokens", "batch_size", "attn_implementation")}
        )
        self.add("p2_hf_pipeline", res["sample"])
        self.checks["hf_vs_client_max_abs_diff"] = max_abs_diff(res["values"], self.client_reward)

    def offline_two_cores(self, halves: list[Path]) -> None:
        """What two cores give this workload here, without HTTP: two offline engines at once, one thread each,
        each pinned to its own core and scoring half of the sequences (P5 without the client and servers)."""
        model = str(MODELS / "reward")
        steps = []
        for i, (core, half) in enumerate(zip(cores(2), halves, strict=True)):
            args = ["bench/offline.py", "--mode", "reward", "--model", model, "--input", str(half), "--repeats", "1"]
            steps.append((f"p5_offline_core{i}", [*args, "--max-model-len", str(MAX_MODEL_LEN)], 1, int(core)))
        sample, results = measure(lambda: subprocess_steps(steps, go=WORK / "go"))
        walls = [r["times_s"][0] for r in results]
        wall, cpu = max(walls), sum(r["process_cpu_s"][0] for r in results)
        both = Sample(wall, 0.0, 0.0, cpu, sample.other_cpu_s * wall / sample.wall_s)
        faults = [r.get("minor_faults") for r in results]
        self.add("p5_offline_2engines", both, engines_s=[round(w, 4) for w in walls], engines_minor_faults=faults)
        values = [v[0] for r in results for v in r["values"]]
        order = [p for half in self.halves for p in half]
        client = dict(zip(self.pairs, self.client_reward, strict=True))
        self.checks["p5_offline_2engines_vs_client_max_abs_diff"] = max_abs_diff(values, [client[p] for p in order])

    # P3 ----------------------------------------------------------------------------------------------------------
    def dpo_servers(self, data: Path) -> None:
        cfg = config("dpo", data, "client-dpo", list(B.PORTS[1:3]))
        warm = config("dpo", data, "client-dpo-warmup", list(B.PORTS[1:3]), limit=2)
        with servers(cfg) as started:
            client_run(warm)
            sample, phases = measure(lambda: client_run(cfg), [s.pid for s in started])
            self.add("p3_client_dpo", sample, **phases)
        if not hasattr(self, "client_dpo"):
            self.client_dpo = client_scores(cfg, self.examples)

    def dpo_in_process(self, pairs_file: Path) -> None:
        results = {}
        for role in ("policy", "reference"):
            args = ["bench/offline.py", "--mode", "dpo", "--model", str(MODELS / role), "--input", str(pairs_file)]
            args += ["--max-model-len", str(MAX_MODEL_LEN)]
            results[role] = self.offline(f"p3_offline_{role}", args, len(CORES))
        pol, ref = results["policy"], results["reference"]
        ps, rs = pol["sample"], ref["sample"]
        both = Sample(ps.wall_s + rs.wall_s, 0.0, 0.0, ps.child_cpu_s + rs.child_cpu_s, ps.other_cpu_s + rs.other_cpu_s)
        self.add("p3_offline_dpo", both, policy_s=round(ps.wall_s, 4), reference_s=round(rs.wall_s, 4))
        ratios = []
        for start, p, r in zip(pol["response_starts"], pol["values"], ref["values"], strict=True):
            lo = max(start, 1) - 1
            ratios.append(sum(p[lo:]) - sum(r[lo:]))
        client = [self.client_dpo[p] for p in self.pairs]
        self.checks["dpo_offline_vs_client_max_abs_diff"] = max_abs_diff(ratios, client)

    def repetition(self, rep: int, data: Path, pairs_file: Path) -> None:
        """One of everything, close together in time (the machine's speed drifts; fresh servers and engines each
        time), the two sides of each ratio back to back: P1's client and engine, P5's two engines and one-thread
        engine, that engine and P5's one endpoint (with the naive client). The first repetition runs the client
        first (the other methods' scores are checked against its); later ones reverse the order every other time."""
        log.info("repetition %d of %d", rep + 1, REPEATS)
        reward: list[Callable[[], None]] = [
            lambda: self.reward_two_endpoints(data),
            lambda: self.reward_offline(pairs_file, len(CORES), "p1_offline_all_cores"),
            lambda: self.offline_two_cores(self.half_files),
            lambda: self.reward_offline(pairs_file, SERVER_THREADS, "p1_offline_1thread"),
            lambda: self.reward_one_endpoint(data),
            lambda: self.hf_pipeline(pairs_file),
        ]
        dpo: list[Callable[[], None]] = [lambda: self.dpo_servers(data), lambda: self.dpo_in_process(pairs_file)]
        if rep % 2:
            reward, dpo = reward[::-1], dpo[::-1]
        for step in reward + dpo:
            step()
