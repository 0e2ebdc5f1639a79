"""Generative judges: an LLM behind an OpenAI-compatible chat endpoint, at temperature 0.

What the judge is asked and how its verdict is read is `judge.prompt`'s (judge_prompts.py: the project's own
prompts, or reward-bench's). Pairwise mode (RM-Bench, RewardBench, pairwise data): each (chosen, rejected) pair is
compared. `judge.order: random` asks once, the two answers in a seeded
random order (`judge.seed`), and credits 1 / 0, or 0.5 for a tie or an answer without a verdict, as RewardBench's
generative script does. `judge.order: both` asks in both orders and credits 1 only when the chosen answer wins
both times, 0 when the rejected one does, and 0.5 otherwise; inconsistent pairs are counted in the warnings.
JudgeBench mode always asks both orders and combines the two verdicts as JudgeBench's own code does (`judgebench`).
Rating mode (RewardBench 2): each answer is rated 1-10 on its own, the rating is the last number of the answer;
one that cannot be parsed is -1, so it is never among the top-rated (all unparsed: every answer ties, 1/k = 0.25),
as reward-bench does.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from typing import Any

import openai

from ..backends.base import Endpoint
from ..config import JudgeOptions
from ..endpoint_pool import EndpointPool
from ..errors import EndpointError, RetryableError, SampleError
from ..examples import Example, prompt_text
from ..retry import retry_after_seconds
from ..scoring.rewardbench2 import UNPARSED
from .base import JudgeMode, Unit
from .judge_prompts import JudgePrompts

_RATING = re.compile(r"\b([1-9]|10)\b\s*$")
UNRATED = -1.0  # a rating that cannot be parsed: below every valid one


def parse_rating(text: str | None) -> int | None:
    """The 1-10 rating that ends the answer, or None."""
    found = _RATING.search((text or "").strip())
    return int(found.group(1)) if found else None


def credit(verdict: str | None, swapped: bool) -> float:
    """1 if the chosen response won, 0 if the rejected one did, 0.5 for a tie or no verdict."""
    if verdict not in ("A", "B"):
        return 0.5
    return 1.0 if verdict == ("B" if swapped else "A") else 0.0


def credit_both(first: str | None, second: str | None) -> float:
    """Both orders asked (chosen as A, then as B): 1 or 0 only for two consistent verdicts, else 0.5."""
    a, b = credit(first, swapped=False), credit(second, swapped=True)
    return a if a == b else 0.5


def judgebench(first: str | None, second: str | None) -> float:
    """Both orders asked, combined as JudgeBench does (utils/metrics.py `compute_final_metrics`, commit 12a499c):
    each verdict for the correct response counts +1, each for the other -1, a tie or no verdict 0; the pair is
    correct (1) when the count is positive, else 0. One win and one tie is correct; one win and one loss is not."""
    votes = sum({1.0: 1, 0.0: -1}.get(c, 0) for c in (credit(first, swapped=False), credit(second, swapped=True)))
    return 1.0 if votes > 0 else 0.0


COMBINE = {"pairwise": credit_both, "judgebench": judgebench}  # how a mode combines the two orders' verdicts


async def ask(ep: Endpoint, messages: list[dict[str, str]], options: JudgeOptions, cache: dict) -> str | None:
    """The judge's answer text (one HTTP request); failures mapped onto the error tree."""
    if ep.url not in cache:  # an OpenAI client on the role's HTTP client; retries are the pool's, not the library's
        key = ep.headers.get("Authorization", "").removeprefix("Bearer ") or "unused"
        # openai 3.x annotates httpx2's client but accepts httpx's (is_legacy_httpx_async_client); 1.x/2.x want httpx's
        client: Any = ep.client
        cache[ep.url] = openai.AsyncOpenAI(base_url=f"{ep.url}/v1", api_key=key, http_client=client, max_retries=0)
    try:
        response = await cache[ep.url].chat.completions.create(
            model=ep.model, messages=messages, temperature=0.0, max_tokens=options.max_tokens
        )
    except (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError) as exc:
        headers = getattr(getattr(exc, "response", None), "headers", None)
        overloaded = isinstance(exc, openai.RateLimitError)
        raise RetryableError(f"{ep}: {type(exc).__name__}: {exc}", retry_after_seconds(headers), overloaded) from None
    except openai.APIStatusError as exc:
        if exc.status_code in (408, 409) or exc.status_code >= 500:
            raise RetryableError(f"{ep}: HTTP {exc.status_code}: {exc.message}") from None
        if exc.status_code in (401, 403, 404):
            raise EndpointError(f"{ep}: HTTP {exc.status_code}: {exc.message}") from None
        raise SampleError(f"{ep}: HTTP {exc.status_code}: {exc.message}") from None
    return response.choices[0].message.content if response.choices else None


class JudgeModel:
    process = False

    def __init__(
        self,
        pool: EndpointPool,
        options: JudgeOptions,
        mode: JudgeMode,
        served: dict[str, Any],
        prompts: JudgePrompts,
    ) -> None:
        self.pool = pool
        self.prompts = prompts
        self.options = options
        self.mode = mode
        self.pairwise = mode != "rating"
        self.order = "both" if mode == "judgebench" else options.order  # JudgeBench's protocol asks both orders
        self.unparsed = 0
        self.inconsistent = 0
        self.unasked = 0
        self._clients: dict[str, openai.AsyncOpenAI] = {}
        self._identity = {
            "kind": "judge",
            "mode": mode,
            "order": self.order if self.pairwise else None,
            "seed": options.seed if self.pairwise and self.order == "random" else None,
            "max_tokens": options.max_tokens,
            "prompt": prompts.name,
            "prompts": prompts.digest,
            # a judge's answers cannot be fingerprinted cheaply: the identity is what the server reports
            "models": {"judge": {"served": served, "fingerprint": None}},
        }

    @property
    def identity(self) -> dict[str, Any]:
        return self._identity

    @property
    def warnings(self) -> list[str]:
        out = []
        if self.unparsed:
            what = {
                "pairwise": "held no verdict and were scored 0.5",
                "rating": "held no 1-10 rating (rated -1)",
                "judgebench": "held no verdict (counted for neither response, as JudgeBench does)",
            }[self.mode]
            out.append(f"{self.unparsed} judge answer(s) {what}")
        if self.inconsistent:
            scored = "scored as JudgeBench does" if self.mode == "judgebench" else "scored 0.5"
            out.append(f"{self.inconsistent} pair(s) judged differently in the two orders were {scored}")
        if self.unasked:
            out.append(
                f"{self.unasked} comparison(s) were scored without asking: {self.prompts.name}'s prompts hold a "
                "one- or two-turn conversation without a system message, as its scripts do"
            )
        return out

    async def check(self) -> None:
        return None

    def swapped(self, prompt: str, chosen: str, rejected: str) -> bool:
        """Seeded coin: does the chosen response appear as answer B?"""
        digest = hashlib.sha256(f"{self.options.seed}\0{prompt}\0{chosen}\0{rejected}".encode()).digest()
        return bool(digest[0] & 1)

    def units(self, ex: Example) -> list[Unit]:
        text = prompt_text(ex.prompt)
        if self.pairwise:
            pairs = [(ex.chosen[c], ex.rejected[r]) for c, r in ex.comparisons()]
            return [Unit(json.dumps([text, c, r], ensure_ascii=False), (c, r)) for c, r in pairs]
        # a prompt that differs by subset (reward-bench's Ties) makes the subset part of what is asked
        group = [ex.group] if self.prompts.rating_by_subset else []
        return [Unit(json.dumps([text, r, *group], ensure_ascii=False), r) for _, _, r in ex.responses()]

    async def score(self, ex: Example, units: list[Unit]) -> list[Any]:
        if self.pairwise:
            return list(await asyncio.gather(*(self._pair(ex, *u.payload) for u in units)))
        return list(await asyncio.gather(*(self._rate(ex, u.payload) for u in units)))

    async def _answer(self, messages: list[dict[str, str]] | None) -> str | None:
        if messages is None:  # a conversation the prompts cannot hold: no request, no verdict
            return None
        return await self.pool.call(lambda ep: ask(ep, messages, self.options, self._clients))

    async def _pair(self, ex: Example, chosen: str, rejected: str) -> dict[str, Any]:
        ask_pair, verdict = self.prompts.pair, self.prompts.verdict
        if ask_pair(ex.prompt, chosen, rejected) is None:
            return {"verdicts" if self.order == "both" else "verdict": None, "unasked": True}
        if self.order == "both":
            answers = await asyncio.gather(
                self._answer(ask_pair(ex.prompt, chosen, rejected)),
                self._answer(ask_pair(ex.prompt, rejected, chosen)),
            )
            return {"verdicts": [verdict(a) for a in answers], "answers": list(answers)}
        swapped = self.swapped(prompt_text(ex.prompt), chosen, rejected)
        a, b = (rejected, chosen) if swapped else (chosen, rejected)
        answer = await self._answer(ask_pair(ex.prompt, a, b))
        return {"verdict": verdict(answer), "swapped": swapped, "answer": answer}

    async def _rate(self, ex: Example, response: str) -> dict[str, Any]:
        answer = await self._answer(self.prompts.rate(ex.prompt, response, ex.group))
        return {"rating": parse_rating(answer), "answer": answer}

    def merge(self, values: list[Any]) -> list[Any]:
        return values

    def reduce(self, value: Any) -> float:
        if value.get("unasked"):
            self.unasked += 1
            return COMBINE[self.mode](None, None) if self.order == "both" else 0.5
        if not self.pairwise:
            self.unparsed += value["rating"] is None
            return UNRATED if value["rating"] is None else float(value["rating"])
        if "verdicts" in value:
            first, second = value["verdicts"]
            self.unparsed += (first is None) + (second is None)
            self.inconsistent += credit(first, False) != credit(second, True)
            return COMBINE[self.mode](first, second)
        self.unparsed += value["verdict"] is None
        return credit(value["verdict"], value["swapped"])

    def details(self, ex: Example, values: list[Any]) -> dict[str, Any] | None:
        if self.pairwise:
            return {"answers": [v.get("answers", v.get("answer")) for v in values]}
        n = len(ex.chosen)
        answers = {"chosen": [v["answer"] for v in values[:n]], "rejected": [v["answer"] for v in values[n:]]}
        return {"answers": answers, UNPARSED: sum(v["rating"] is None for v in values)}
