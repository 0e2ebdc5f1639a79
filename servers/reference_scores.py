"""In-process transformers scores, the reference the tests hold vLLM's answers against (no server involved).

    echo '{"model_dir": "models/tiny/reward", "kind": "reward", "inputs": [[0, 4, 204]]}' |
        .venv-server/bin/python servers/reference_scores.py

kind "reward": the raw head output of each sequence (a list of floats, one per label; no sigmoid).
kind "logprobs": log p(token_i | tokens_<i) for each token of each sequence, null for the first, the shape of
vLLM's `prompt_logprobs`.
kind "prm": a `Qwen2ForProcessRewardModel` (servers/build_prm.py) as its model card computes step rewards: the
softmax of the head's two outputs at every `<extra_0>` token, its second value (the step is right); an input is
token ids, or messages, which it renders with the tokenizer's chat template and encodes as the model card does.
kind "step_logprobs" (with "good", "bad" and "tag" token ids): a causal LM read as a Math-Shepherd PRM in one
pass: at every `tag` token, the softmax of the next-token logits of `good` and `bad`, its first value.
kind "chat_steps" (with "good" and "bad"): a causal LM read as an RLHFlow PRM: for each conversation (messages),
the same at the end of its rendering with the generation prompt.
Float32 throughout; each sequence runs alone, so padding cannot change a number.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

import torch  # noqa: E402
from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification  # noqa: E402


def reward(model_dir: str, inputs: list[list[int]]) -> list[list[float]]:
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, dtype=torch.float32).eval()
    with torch.inference_mode():
        return [model(torch.tensor([ids])).logits[0].tolist() for ids in inputs]


def logprobs(model_dir: str, inputs: list[list[int]]) -> list[list[float | None]]:
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    out: list[list[float | None]] = []
    with torch.inference_mode():
        for ids in inputs:
            logits = model(torch.tensor([ids])).logits[0]  # position i predicts token i + 1
            per_token = torch.log_softmax(logits[:-1], dim=-1).gather(1, torch.tensor(ids[1:])[:, None])
            out.append([None, *per_token[:, 0].tolist()])
    return out


def prm(model_dir: str, inputs: list[list[Any]]) -> list[list[float]]:
    """Per-step probabilities of a Qwen2ForProcessRewardModel: its `model.` weights in transformers' Qwen2Model,
    its `score.` head as the two-layer MLP the published modeling file and vLLM's qwen2_rm.py define."""
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoTokenizer, Qwen2Model

    config = AutoConfig.from_pretrained(model_dir)
    weights = load_file(f"{model_dir}/model.safetensors")
    body = Qwen2Model(config).to(torch.float32).eval()
    body.load_state_dict({k[len("model.") :]: v for k, v in weights.items() if k.startswith("model.")})
    hidden = config.hidden_size
    head = torch.nn.Sequential(torch.nn.Linear(hidden, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 2))
    head.load_state_dict({k[len("score.") :]: v for k, v in weights.items() if k.startswith("score.")})
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    step_sep_id = tokenizer.encode("<extra_0>")[0]  # as the model card finds it
    out = []
    with torch.inference_mode():
        for item in inputs:  # token ids, or messages rendered and encoded as the model card does
            chat = bool(item) and isinstance(item[0], dict)
            ids = tokenizer.encode(tokenizer.apply_chat_template(item, tokenize=False)) if chat else item
            x = torch.tensor([ids])
            probabilities = torch.softmax(head(body(input_ids=x).last_hidden_state)[0], dim=-1)
            out.append(probabilities[x[0] == step_sep_id][:, 1].tolist())
    return out


def step_logprobs(model_dir: str, inputs: list[list[int]], good: int, bad: int, tag: int) -> list[list[float]]:
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    out = []
    with torch.inference_mode():
        for ids in inputs:
            x = torch.tensor([ids])
            scores = model(x).logits[0][:, [good, bad]].softmax(dim=-1)[:, 0]
            out.append(scores[x[0] == tag].tolist())
    return out


def chat_steps(model_dir: str, inputs: list[list[dict[str, str]]], good: int, bad: int) -> list[float]:
    """RLHFlow's reading: each conversation rendered with its generation prompt (as ProcessBench's run_eval.py
    renders one: the template's text, then its tokens without special tokens added), the softmax of the next-token
    logits of `good` and `bad` at its end, its first value."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    out = []
    with torch.inference_mode():
        for messages in inputs:
            text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            ids = tokenizer(text, add_special_tokens=False).input_ids
            out.append(model(torch.tensor([ids])).logits[0, -1, [good, bad]].softmax(dim=-1)[0].item())
    return out


def main() -> int:
    request = json.load(sys.stdin)
    kinds = {"reward": reward, "logprobs": logprobs, "prm": prm, "step_logprobs": step_logprobs,
             "chat_steps": chat_steps}  # fmt: skip
    if request.get("kind") not in kinds:
        print(f"kind must be one of {sorted(kinds)}, not {request.get('kind')!r}", file=sys.stderr)
        return 2
    extra = {k: request[k] for k in ("good", "bad", "tag") if k in request}
    json.dump(kinds[request["kind"]](request["model_dir"], request["inputs"], **extra), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
