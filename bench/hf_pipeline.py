"""A RewardBench-style in-process transformers pipeline (run in .venv-server): the usual way to score a reward model
without a server.

    .venv-server/bin/python bench/hf_pipeline.py --model models/bench/reward --input convs.json --repeats 3 \
        --out result.json

As reward-bench's `run_rm.py` does: conversations in dataset order, chat template applied by the tokenizer,
batches of 8 padded to the longest sequence in the batch, fp32, `torch.inference_mode()`, the raw logit of the
one-label head. The same token ids as the server (templated outside the timed region); the timed region is
padding, the forward passes and reading the scores back. One untimed warm-up batch first.
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
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

BATCH_SIZE = 8


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--input", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    threads = os.environ.get("OMP_NUM_THREADS")
    if threads:
        torch.set_num_threads(int(threads))
    pairs = json.loads(args.input.read_text(encoding="utf-8"))
    t0 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(args.model)
    ids: list[list[int]] = []
    for prompt, response in pairs:
        messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": response}]
        seq: Any = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=False)
        ids.append(list(seq if isinstance(seq, list) else seq["input_ids"]))
    tokenize_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    model = AutoModelForSequenceClassification.from_pretrained(args.model, dtype=torch.float32).eval()
    load_s = time.perf_counter() - t0
    pad = tok.pad_token_id

    def run(seqs: list[list[int]]) -> list[float]:
        scores: list[float] = []
        with torch.inference_mode():
            for i in range(0, len(seqs), args.batch_size):
                batch = seqs[i : i + args.batch_size]
                width = max(len(s) for s in batch)  # pad to the longest in the batch (right padding)
                input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for row, s in enumerate(batch):
                    input_ids[row, : len(s)] = torch.tensor(s)
                    mask[row, : len(s)] = 1
                logits = model(input_ids=input_ids, attention_mask=mask).logits
                scores.extend(logits[:, 0].float().tolist())
        return scores

    warmup_s, times, cpu, values, faults = timed(run, ids[: args.batch_size], ids, args.repeats)

    padded = sum(
        len(ids[i : i + args.batch_size]) * max(len(s) for s in ids[i : i + args.batch_size])
        for i in range(0, len(ids), args.batch_size)
    )
    result = {
        "model": args.model,
        "sequences": len(ids),
        "tokens": sum(len(s) for s in ids),
        "padded_tokens": padded,
        "batch_size": args.batch_size,
        "times_s": times,
        "process_cpu_s": cpu,
        "minor_faults": faults,
        "tokenize_s": tokenize_s,
        "load_s": load_s,
        "warmup_s": warmup_s,
        "torch_threads": torch.get_num_threads(),
        "omp_num_threads": threads,
        "attn_implementation": getattr(model.config, "_attn_implementation", None),
        "values": values,
    }
    args.out.write_text(json.dumps(result) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
