"""vLLM's offline engine in one process, no HTTP: the limit the client is measured against (run in .venv-server).

    .venv-server/bin/python bench/offline.py --mode reward --model models/bench/reward --input convs.json \
        --repeats 3 --out result.json

`--input` is a JSON list of [prompt, response] pairs. They are templated with the model's tokenizer
(`apply_chat_template`, no generation prompt: the token ids vLLM's server builds for `/pooling` with messages and
`/tokenize` with add_generation_prompt=false) outside the timed region; the timed region is the engine call only.
One untimed warm-up pass over a few sequences first (the first call allocates and loads kernels). With `--ready`
and `--go`, several engines (one per core, each pinned by the caller) start their timed passes together.

- reward: `LLM.encode(TokensPrompt...)` on the pooling runner, raw head output (`use_activation: false`).
- dpo: `LLM.generate(TokensPrompt..., SamplingParams(max_tokens=1, prompt_logprobs=0))`, the per-token log-probs
  of every sequence (one model per process: run it once for the policy and once for the reference).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from timing import timed

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.pop("VLLM_CPU_KVCACHE_SPACE", None)  # an empty value crashes the worker

WARMUP_SEQUENCES = 8


def _template(tok: Any, messages: list[dict[str, str]], add_generation_prompt: bool) -> list[int]:
    ids: Any = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=add_generation_prompt)
    if not isinstance(ids, list):  # transformers 5 may return a BatchEncoding
        ids = ids["input_ids"]
    return [int(t) for t in ids]


def token_ids(model: str, pairs: list[list[str]]) -> tuple[list[list[int]], list[int]]:
    """The conversations' token ids, and where each response starts (as the client finds it: after the prompt
    with its generation prompt, or at the common prefix when BPE merged across the boundary)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model)
    out, starts = [], []
    for prompt, response in pairs:
        full = _template(tok, [{"role": "user", "content": prompt}, {"role": "assistant", "content": response}], False)
        head = _template(tok, [{"role": "user", "content": prompt}], True)
        common = 0
        for a, b in zip(head, full, strict=False):
            if a != b:
                break
            common += 1
        out.append(full)
        starts.append(common)
    return out, starts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["reward", "dpo"], required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--input", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--max-model-len", type=int, default=4096)
    parser.add_argument("--kv-cache-bytes", type=int, default=128 * 2**20)
    parser.add_argument("--ready", type=Path, help="created once loaded and warmed up")
    parser.add_argument("--go", type=Path, help="the timed pass starts when this file exists")
    args = parser.parse_args()

    import torch
    from vllm import LLM, SamplingParams
    from vllm.config import PoolerConfig
    from vllm.inputs import TokensPrompt

    pairs = json.loads(args.input.read_text(encoding="utf-8"))
    t0 = time.perf_counter()
    ids, starts = token_ids(args.model, pairs)
    tokenize_s = time.perf_counter() - t0
    prompts = [TokensPrompt(prompt_token_ids=s) for s in ids]

    t0 = time.perf_counter()
    common: dict[str, Any] = dict(
        model=args.model,
        dtype="float32",
        enforce_eager=True,
        max_model_len=args.max_model_len,
        kv_cache_memory_bytes=args.kv_cache_bytes,
        distributed_executor_backend="uni",
        seed=0,
    )
    if args.mode == "reward":
        llm = LLM(runner="pooling", pooler_config=PoolerConfig(use_activation=False), **common)

        def run(batch: list[TokensPrompt]) -> list[Any]:
            outs = llm.encode(batch, use_tqdm=False, pooling_task="classify")
            return [o.outputs.data.reshape(-1).tolist() for o in outs]

    else:
        llm = LLM(**common)
        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0)

        def run(batch: list[TokensPrompt]) -> list[Any]:
            outs = llm.generate(batch, params, use_tqdm=False)
            values = []
            for o in outs:  # LLM.generate returns outputs in input order
                seq = o.prompt_token_ids
                lps = o.prompt_logprobs
                values.append([float(lps[t][seq[t]].logprob) for t in range(1, len(seq))])
            return values

    load_s = time.perf_counter() - t0

    def start_signal() -> None:
        """Several engines at once (one per core) start their timed passes together."""
        if args.ready:
            args.ready.touch()
        while args.go and not args.go.exists():
            time.sleep(0.005)

    warmup_s, times, cpu, values, faults = timed(run, prompts[:WARMUP_SEQUENCES], prompts, args.repeats, start_signal)

    result = {
        "mode": args.mode,
        "model": args.model,
        "sequences": len(prompts),
        "tokens": sum(len(s) for s in ids),
        "times_s": times,
        "process_cpu_s": cpu,
        "minor_faults": faults,
        "tokenize_s": tokenize_s,
        "load_s": load_s,
        "warmup_s": warmup_s,
        "torch_threads": torch.get_num_threads(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "response_starts": starts,
        "values": values,
    }
    args.out.write_text(json.dumps(result) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
