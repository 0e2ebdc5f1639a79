"""A generative judge's answers: read from the server's body, split from the thinking, combined over samples, and
what they cost. Pure functions; the requests are judge.py's.

A *judgement* is what one question to the judge (one order of one pair, or one rating) brought back, stored as it
came: for each sample (the request's `n`) its turns (a follow-up turn where the prompts ask one, JudgeBench's
arena-hard), each turn's `content`, the thinking the server split off (vLLM's `reasoning`, `reasoning_content` from
older releases) and its `finish_reason`; the token usage and the seconds the requests took. Verdicts are read from
it when scored, never stored: the answer is what follows the thinking — the server's split, or in the text the part
after the last `</think>` (a `<think>` never closed leaves no answer) — so a verdict written while thinking never
counts. A sample without a verdict is *cut off* when its last turn ended at max_tokens (`finish_reason: length`),
and *cut off while thinking* when the thinking was not closed; otherwise it gave none.

A body that is no answer — not JSON, an `error` object (some gateways answer errors with HTTP 200), no `choices`,
a choice without a `message`, fewer choices than asked — raises, so the prompt fails and is asked again by the next
run: a fault never becomes a verdict or a tie.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .. import constants as C
from ..backends.schemas import ChatCompletion, parse
from ..errors import EndpointError, RetryableError, SampleError

THINK_OPEN, THINK_CLOSE = C.JUDGE_THINK
Judgement = dict[str, Any]  # JSON, as stored
COST_KEYS = ("prompt_tokens", "reasoning_tokens", "answer_tokens", "seconds")


def _error(body: Any) -> tuple[str, Any] | None:
    """The message and code of an error answer (OpenAI's `{"error": {...}}`, vLLM's `{"object": "error"}`)."""
    if not isinstance(body, dict):
        return None
    if body.get("object") == "error":
        return str(body.get("message", body))[:300], body.get("code")
    err = body.get("error")
    if err is None or err == {}:
        return None
    if isinstance(err, dict):
        return str(err.get("message", err))[:300], err.get("code", body.get("code"))
    return str(err)[:300], body.get("code")


def judgement(body: Any, n: int, where: str, seconds: float) -> Judgement:
    """A decoded chat-completion answer as a stored judgement; an error answer is a RetryableError (408, 409,
    429, 5xx), an EndpointError (401, 403, 404) or a SampleError (anything else), a wrong shape a ShapeError."""
    if (found := _error(body)) is not None:
        message, code = found
        status = int(code) if isinstance(code, int | str) and str(code).isdigit() else None
        text = f"{where}: error answer{f' (code {status})' if status else ''}: {message}"
        if status in C.RETRY_STATUSES:
            raise RetryableError(text, overloaded=status == 429)
        if status in (401, 403, 404):
            raise EndpointError(text)
        raise SampleError(text)
    answer = parse(ChatCompletion, body, where)
    if len(answer.choices) != n:
        raise SampleError(f"{where}: unexpected answer: {len(answer.choices)} choice(s) for n={n}")
    samples = [
        [{"content": c.message.content, "reasoning": c.message.reasoning or c.message.reasoning_content,
          "finish": c.finish_reason}]
        for c in sorted(answer.choices, key=lambda c: c.index)
    ]  # fmt: skip
    usage = answer.usage
    details = usage.completion_tokens_details if usage else None
    return {
        "samples": samples,
        "usage": {
            "prompt": usage.prompt_tokens if usage else None,
            "completion": usage.completion_tokens if usage else None,
            "reasoning": details.reasoning_tokens if details else None,
        },
        "seconds": seconds,
        "requests": 1,
    }


def with_follow_ups(first: Judgement, follow_ups: dict[int, Judgement]) -> Judgement:
    """`first` with each follow-up's one answer appended as the next turn of its sample, usage and time added."""
    if not follow_ups:
        return first
    samples = [list(turns) for turns in first["samples"]]
    usage = dict(first["usage"])
    for i, more in follow_ups.items():
        samples[i].extend(more["samples"][0])
        for key in usage:
            usage[key] = None if usage[key] is None or more["usage"][key] is None else usage[key] + more["usage"][key]
    seconds = first["seconds"] + sum(m["seconds"] for m in follow_ups.values())
    return {"samples": samples, "usage": usage, "seconds": seconds, "requests": 1 + len(follow_ups)}


def split(turn: dict[str, Any]) -> tuple[str, str, bool]:
    """(thinking, answer, thinking left open) of one turn: the server's split, then `<think>` tags in the text."""
    text = turn.get("content") or ""
    thinking = turn.get("reasoning") or ""
    if THINK_CLOSE in text:  # a template may open the thinking itself: only the closing tag is in the text
        before, _, text = text.rpartition(THINK_CLOSE)
        return thinking + before.replace(THINK_OPEN, "", 1), text, False
    if THINK_OPEN in text:
        text, _, after = text.partition(THINK_OPEN)
        return thinking + after, text, True
    # the server split the thinking off and no answer followed: it ran out while thinking, or stopped there
    return thinking, text, bool(thinking) and not text.strip() and turn.get("finish") == "length"


def answer_text(sample: list[dict[str, Any]]) -> str:
    """What a sample answered after its thinking, its turns joined by a newline (as JudgeBench joins them)."""
    return "\n".join(split(turn)[1] for turn in sample)


def thought(j: Judgement) -> bool:
    """Whether any answer of the judgement held thinking."""
    return any(split(turn)[0] for sample in j["samples"] for turn in sample)


def cut_off(sample: list[dict[str, Any]]) -> str | None:
    """'thinking' or 'answer' when the sample's last turn ran out of tokens (there, or after the thinking), else
    None."""
    last = sample[-1]
    if last.get("finish") != "length":
        return None
    return "thinking" if split(last)[2] else "answer"


@dataclass(frozen=True)
class Reading:
    """A judgement read: its value (verdict or rating, None without one), why there is none, and the votes."""

    value: Any
    cut: str | None = None  # no value, and a sample was cut off: "thinking" (while thinking) or "answer"
    votes: dict[str, int] | None = None  # samples > 1: how many samples gave each value ("none" for no value)


def read(j: Judgement, parse_one: Callable[[str], Any], combine: Callable[[list[Any]], Any]) -> Reading:
    """The judgement's value: each sample's answer read by `parse_one`, the samples' values combined."""
    values = [parse_one(answer_text(sample)) for sample in j["samples"]]
    value = values[0] if len(values) == 1 else combine([v for v in values if v is not None])
    cuts = {cut_off(sample) for sample, v in zip(j["samples"], values, strict=True) if v is None} - {None}
    cut = None if value is not None else ("thinking" if "thinking" in cuts else "answer" if cuts else None)
    votes = None if len(values) == 1 else dict(Counter("none" if v is None else str(v) for v in values))
    return Reading(value, cut, votes)


def majority(verdicts: list[str]) -> str | None:
    """The verdict most samples gave; a tie between the most given is a tie ('C'); None when none gave one."""
    if not verdicts:
        return None
    (top, count), *rest = Counter(verdicts).most_common()
    return "C" if rest and rest[0][1] == count else top


def mean_rating(ratings: list[int]) -> float | None:
    """Several samples' ratings: their mean (None when none gave one)."""
    return sum(ratings) / len(ratings) if ratings else None


def cost(j: Judgement) -> dict[str, Any]:
    """What a judgement cost: prompt, thinking and answer tokens (None where the server did not count the thinking
    it did), seconds and requests."""
    usage = j["usage"]
    reasoning, thinking = usage["reasoning"], thought(j)
    if reasoning is None and not thinking:
        reasoning = 0  # no thinking seen: every generated token was answer
    elif reasoning == 0 and thinking:
        reasoning = None  # vLLM counts only tokens after a <think> it generated; a template may have opened it
    completion = usage["completion"]
    answer = completion - reasoning if completion is not None and reasoning is not None else None
    return {"prompt_tokens": usage["prompt"], "reasoning_tokens": reasoning, "answer_tokens": answer,
            "seconds": round(j["seconds"], 4), "requests": j["requests"]}  # fmt: skip


def total(costs: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Costs added up; a count is None when one of its parts is."""
    out: dict[str, Any] = {k: 0 for k in (*COST_KEYS, "requests")}
    for c in costs:
        for k in out:
            out[k] = None if out[k] is None or c[k] is None else out[k] + c[k]
    if out["seconds"] is not None:
        out["seconds"] = round(out["seconds"], 4)
    return out


def run_cost(details: Iterable[dict[str, Any] | None]) -> dict[str, Any] | None:
    """A judge run's cost from its prompts' details (their `cost`): totals over every verdict in the result
    (reused ones too), and the median per prompt; None when no prompt asked the judge."""
    per_prompt = [d["cost"] for d in details if d and d.get("cost") and d["cost"]["requests"]]
    if not per_prompt:
        return None
    medians = {
        k: None if any(c[k] is None for c in per_prompt) else statistics.median(c[k] for c in per_prompt)
        for k in COST_KEYS
    }
    return {"total": total(per_prompt), "median_per_prompt": medians, "prompts": len(per_prompt)}
