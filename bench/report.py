"""The bench's ratios and its table on stdout (bench/run.py)."""

from __future__ import annotations

from typing import Any

from constants import SIM_ENDPOINTS, SIM_LARGE_REQUESTS, SIM_WORKERS
from harness import REPEATS, median
from steps import Bench

TARGETS = {
    "p1_vs_offline": (">=", 0.90),
    "p2_vs_hf": (">=", 3.0),
    "p2_vs_naive": (">=", 5.0),
    "p3_dpo_vs_offline": (">=", 0.85),
    "p4_client_cpu_share": ("<=", 0.05),
    "p5_two_endpoints": (">=", 1.8),
    "p6_dpo_logprob_tax": ("<=", 0.10),
    "p7_client_cpu_ms_per_sequence_reward": ("<=", 0.25),
    "p7_client_cpu_ms_per_sequence_dpo": ("<=", 1.0),
    "p8_sim_sequences_per_s_16_endpoints": (">=", 5000.0),
    "p8_sim_client_queue_share": ("<", 0.05),
    "p8_scoring_cpu_ms_per_sequence_64": ("<=", 0.1),
    "p9_client_peak_rss_mb_dpo": ("<=", 300.0),
    "p9_client_peak_rss_mb_pairwise": ("<=", 1024.0),
    "p10_client_fixed_cpu_s": ("<", 0.5),
}


def cpu_share(rows: list[dict[str, Any]], client: str = "client_cpu_s") -> float:
    return median([r[client] / (r[client] + r["server_cpu_s"]) for r in rows])


NAN = float("nan")


def logprob_tax(row: dict[str, Any]) -> float:
    """(the servers' HTTP processes' CPU + the client's CPU) / the engines' CPU, of one DPO run."""
    threads = row["server_threads_cpu_s"]
    http = sum(v for k, v in threads.items() if k.startswith("main/"))
    engine = sum(v for k, v in threads.items() if k.startswith("VLLM::EngineCore/"))
    return (http + row["client_cpu_s"]) / engine


def scale_ratios(b: Bench) -> dict[str, float]:
    """P7-P10: the client's own costs (one repetition each)."""

    def per_seq(key: str) -> float:
        return 1000 * median([r["client_cpu_s"] / r["sent"] for r in b.raw[key]]) if key in b.raw else NAN

    def first(key: str, field: str) -> float:
        return float(b.raw[key][0][field]) if key in b.raw else NAN  # a scale step that failed: NaN

    out = {
        "p7_client_cpu_ms_per_sequence_reward": per_seq("p4_scale_client_tiny"),
        "p7_client_cpu_ms_per_sequence_dpo": per_seq("p7_dpo_client_tiny"),
        "p9_client_peak_rss_mb_dpo": first("p9_client_dpo_process", "peak_rss_mb"),
        "p9_client_peak_rss_mb_pairwise": first("p9_client_pairwise_process", "peak_rss_mb"),
        "p10_client_fixed_cpu_s": first("p10_client_one_prompt", "client_cpu_s"),
    }
    return out | (sim_ratios(b.raw) if "p8_sim_16_endpoints" in b.raw else {})


def sim_ratios(raw: dict[str, list[dict[str, Any]]]) -> dict[str, float]:
    out = {f"p8_sim_sequences_per_s_{n}_endpoints": raw[f"p8_sim_{n}_endpoints"][0]["sequences_per_s"]
           for n in SIM_ENDPOINTS}  # fmt: skip
    out["p8_sim_client_queue_share"] = raw["p8_sim_16_endpoints"][0]["client_queue_share"]
    out["p8_sim_client_queue_share_1_endpoint"] = raw["p8_sim_1_endpoints"][0]["client_queue_share"]
    out["p8_sim_client_queue_share_64_endpoints"] = raw["p8_sim_64_endpoints"][0]["client_queue_share"]
    for n in (16, 64):  # the client's CPU per sequence: scoring (what bounds the rate it feeds), the whole run
        row = raw[f"p8_sim_{n}_endpoints"][0]
        out[f"p8_scoring_cpu_ms_per_sequence_{n}"] = row["scoring_cpu_ms_per_sequence"]
        out[f"p8_whole_run_cpu_ms_per_sequence_{n}"] = row["cpu_ms_per_sequence"]
    key = f"p8_sim_{max(SIM_ENDPOINTS)}_endpoints_{SIM_WORKERS}_workers"
    if runs := raw.get(key):  # the same run in SIM_WORKERS worker processes
        out[f"p8_sim_sequences_per_s_64_endpoints_{SIM_WORKERS}_workers"] = runs[0]["sequences_per_s"]
        out[f"p8_scoring_cpu_ms_per_sequence_64_{SIM_WORKERS}_workers"] = runs[0]["scoring_cpu_ms_per_sequence"]
        out[f"p8_whole_run_cpu_ms_per_sequence_64_{SIM_WORKERS}_workers"] = runs[0]["cpu_ms_per_sequence"]
    texts = SIM_LARGE_REQUESTS
    if runs := raw.get(f"p8_sim_{max(SIM_ENDPOINTS)}_endpoints_{texts}_texts"):  # reward.texts_per_request raised
        out[f"p8_sim_sequences_per_s_64_endpoints_{texts}_texts"] = runs[0]["sequences_per_s"]
        out[f"p8_scoring_cpu_ms_per_sequence_64_{texts}_texts"] = runs[0]["scoring_cpu_ms_per_sequence"]
        out[f"p8_whole_run_cpu_ms_per_sequence_64_{texts}_texts"] = runs[0]["cpu_ms_per_sequence"]
    return out


def ratios(b: Bench) -> dict[str, float]:
    client = b.med("p1_client_reward")
    scoring = median([r["scoring_s"] for r in b.raw["p1_client_reward"]])
    scale = b.raw.get("p4_scale_client_tiny", [{"client_cpu_s": NAN, "server_cpu_s": NAN, "sent": 1}])
    return {
        # the client on one server per core vs the engine with every core: each at its best on this machine
        "p1_vs_offline": b.med("p1_offline_all_cores") / client,
        "p2_vs_hf": b.med("p2_hf_pipeline") / client,
        "p2_vs_naive": b.med("p2_naive_client") / client,
        "p3_dpo_vs_offline": b.med("p3_offline_dpo") / b.med("p3_client_dpo"),
        "p4_client_cpu_share": cpu_share(b.raw["p1_client_reward"]),
        "p5_two_endpoints": b.med("p5_client_1endpoint") / client,
        # the same, without the per-run fixed costs (reading the data, summary and heatmaps)
        "p1_vs_offline_scoring_only": b.med("p1_offline_all_cores") / scoring,
        "p4_client_cpu_share_scoring_only": cpu_share(b.raw["p1_client_reward"], "scoring_cpu_s"),
        # one server with one thread vs the engine with one thread: the same engine configuration
        "p1_one_server_vs_offline_1thread": b.med("p1_offline_1thread") / b.med("p5_client_1endpoint"),
        # what a second core gives the engine itself (two pinned one-thread engines at once, no HTTP)
        "p5_offline_two_engines": b.med("p1_offline_1thread") / b.med("p5_offline_2engines"),
        # the most any client could gain over the naive one here: the engine's own best vs the naive client
        "p2_vs_naive_upper_bound": b.med("p2_naive_client") / b.med("p1_offline_all_cores"),
        # every prompt, tiny models: the client's own cost where the server is fast
        "p4_scale_client_cpu_share_tiny": cpu_share(scale),
        "p4_scale_client_cpu_ms_per_sequence_tiny": 1000 * median([r["client_cpu_s"] / r["sent"] for r in scale]),
        "p6_dpo_logprob_tax": median([logprob_tax(r) for r in b.raw["p3_client_dpo"]]),
    } | scale_ratios(b)


def paired(b: Bench) -> dict[str, list[float]]:
    """The ratios of each repetition on its own (its measurements ran close together in time)."""

    def per_rep(other: str, client: str) -> list[float]:
        return [round(o / c, 4) for o, c in zip(b.walls(other), b.walls(client), strict=True)]

    return {
        "p1_vs_offline": per_rep("p1_offline_all_cores", "p1_client_reward"),
        "p2_vs_hf": per_rep("p2_hf_pipeline", "p1_client_reward"),
        "p2_vs_naive": per_rep("p2_naive_client", "p1_client_reward"),
        "p3_dpo_vs_offline": per_rep("p3_offline_dpo", "p3_client_dpo"),
        "p5_two_endpoints": per_rep("p5_client_1endpoint", "p1_client_reward"),
        "p1_one_server_vs_offline_1thread": per_rep("p1_offline_1thread", "p5_client_1endpoint"),
        "p2_vs_naive_upper_bound": per_rep("p2_naive_client", "p1_offline_all_cores"),
        "p5_offline_two_engines": per_rep("p1_offline_1thread", "p5_offline_2engines"),
        "p6_dpo_logprob_tax": [round(logprob_tax(r), 4) for r in b.raw["p3_client_dpo"]],
    }


ROWS = [
    ("P1", "client, reward, 2 endpoints (1 core each)", "p1_client_reward"),
    ("P1", "vLLM offline engine, all cores", "p1_offline_all_cores"),
    ("P1", "vLLM offline engine, 1 thread", "p1_offline_1thread"),
    ("P2", "transformers pipeline, batch 8, all cores", "p2_hf_pipeline"),
    ("P2", "naive client, 1 request at a time", "p2_naive_client"),
    ("P3", "client, DPO (2 servers, 1 core each)", "p3_client_dpo"),
    ("P3", "vLLM offline, policy + reference, all cores", "p3_offline_dpo"),
    ("P5", "client, reward, 1 endpoint (1 core)", "p5_client_1endpoint"),
    ("P5", "vLLM offline, 2 engines at once, 1 core each", "p5_offline_2engines"),
    ("P4", "client, reward, TINY model, scale run", "p4_scale_client_tiny"),
    ("P7", "client, DPO, TINY models, scale run", "p7_dpo_client_tiny"),
    ("P8", "client, reward, 1 simulated endpoint", "p8_sim_1_endpoints"),
    ("P8", "client, reward, 4 simulated endpoints", "p8_sim_4_endpoints"),
    ("P8", "client, reward, 16 simulated endpoints", "p8_sim_16_endpoints"),
    ("P8", "client, reward, 64 simulated endpoints", "p8_sim_64_endpoints"),
    ("P8", f"client, reward, 64 endpoints, {SIM_WORKERS} workers", f"p8_sim_64_endpoints_{SIM_WORKERS}_workers"),
    (
        "P8",
        f"client, reward, 64 endpoints, {SIM_LARGE_REQUESTS} texts a request",
        f"p8_sim_64_endpoints_{SIM_LARGE_REQUESTS}_texts",
    ),
]


def table(b: Bench, sequences: int, prompts: int, r: dict[str, float]) -> str:
    lines = [
        f"RM-Bench: {prompts} prompts, {sequences} distinct sequences, bench models; {REPEATS} repetition(s), medians",
        "",
        f"{'':3} {'what':46} {'median s':>9} {'seq/s':>8} {'min..max s':>13} {'client cpu':>10} {'bg cores':>8}",
    ]
    for part, what, key in ROWS:
        if key not in b.raw:
            continue  # a scale step that failed (its error is in the checks)
        walls = b.walls(key)
        n = b.raw[key][0].get("sent", sequences)
        bg = median([x["background_cores"] or 0.0 for x in b.raw[key]])
        cpu = median([x["client_cpu_s"] for x in b.raw[key]])
        cpu_text = f"{cpu:10.2f}" if cpu else f"{'-':>10}"
        span = f"{min(walls):.1f}..{max(walls):.1f}"
        lines.append(
            f"{part:3} {what:46} {median(walls):9.2f} {n / median(walls):8.2f} {span:>13} {cpu_text} {bg:8.2f}"
        )
    if "p4_scale_client_tiny" in b.raw:
        scale = b.raw["p4_scale_client_tiny"][0]
        lines.append(f"    (scale run: {scale['sent']} sequences, every prompt, tiny model, 1 repetition)")
    lines += ["", f"{'ratio (client / other)':40} {'value':>8}  target"]
    for key, value in r.items():
        op, target = TARGETS.get(key, ("", None))
        verdict = ""
        if target is not None:
            verdict = "met" if (value >= target if op == ">=" else value <= target) else "MISSED"
        lines.append(f"{key:40} {value:8.3f}  {op}{target if target is not None else ''} {verdict}")
    return "\n".join(lines)
