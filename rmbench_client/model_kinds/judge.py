"""Generative judges: an LLM behind an OpenAI-compatible chat endpoint, at temperature 0 unless configured.

What the judge is asked and how its verdict is read is `judge.prompt`'s (judge_prompts.py: the project's own
prompts, reward-bench's or JudgeBench's). What is stored is the judge's answer as it came (judge_answers.py); the
verdict is read from the part after the thinking when scored. With `judge.samples` n > 1 each question is asked
for n answers (at `judge.temperature` > 0, seeded), and the verdict is the one most answers gave (a tie between the
most given is a tie; answers without one do not vote); a rating is the mean of the parsed ratings.

Pairwise mode (RM-Bench, RewardBench, pairwise data): each (chosen, rejected) pair is compared. `judge.order:
random` asks once, the two answers in a seeded random order (`judge.seed`), and credits 1 / 0, or 0.5 for a tie or
an answer without a verdict, as RewardBench's generative script does. `judge.order: both` asks in both orders and
credits 1 only when the chosen answer wins both times, 0 when the rejected one does, and 0.5 otherwise;
inconsistent pairs are counted in the warnings. JudgeBench mode always asks both orders and combines the two
verdicts as JudgeBench's own code does (`judgebench`). Rating mode (RewardBench 2): each answer is rated 1-10 on
its own, the rating is the last number of the answer; one that cannot be parsed is -1, so it is never among the
top-rated (all unparsed: every answer ties, 1/k = 0.25), as reward-bench does.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from collections import Counter
from typing import Any

import httpx
import openai

from ..backends.base import Endpoint
from ..backends.retry import retry_after_seconds
from ..backends.transport import answer_json
from ..benchmarks.spec import JudgeMode
from ..config.schema import JudgeOptions
from ..errors import ConfigError, EndpointError, RetryableError, RmbError, SampleError
from ..examples import UNPARSED_RATINGS, Example, prompt_text
from ..pool.endpoint_pool import EndpointPool
from ..pool.provenance import for_units
from .base import Unit
from .judge_answers import (
    Judgement,
    Reading,
    answer_text,
    cost,
    judgement,
    majority,
    mean_rating,
    read,
    total,
    with_follow_ups,
)
from .judge_prompts import JudgePrompts

_RATING = re.compile(r"\b([1-9]|10)\b\s*$")
UNRATED = -1.0  # a rating that cannot be parsed: below every valid one
# what a stored judge value holds (judge_answers.py): part of every key, so values stored before answers were kept
# whole (the thinking, finish reason, usage) and before error answers were refused are asked again
JUDGEMENT_FORMAT = 2


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


async def ask(
    ep: Endpoint, messages: list[dict[str, str]], options: JudgeOptions, cache: dict[str, Any], n: int = 1
) -> Judgement:
    """The judge's `n` answers to one question (one HTTP request), as a stored judgement; failures and answers
    that are no answer (judge_answers.judgement) mapped onto the error tree."""
    if ep.url not in cache:  # an OpenAI client on the role's HTTP client; retries are the pool's, not the library's
        key = ep.headers.get("Authorization", "").removeprefix("Bearer ") or "unused"
        # openai 3.x annotates httpx2's client but accepts httpx's (is_legacy_httpx_async_client); 1.x/2.x want httpx's
        client: Any = ep.client
        cache[ep.url] = openai.AsyncOpenAI(base_url=f"{ep.url}/v1", api_key=key, http_client=client, max_retries=0)
    sampled = {"n": n} if n > 1 else {}
    if options.temperature > 0:  # vLLM seeds each of the n samples apart (seed + index): reproducible samples
        sampled["seed"] = options.seed
    budget = options.reasoning_budget
    extra = {"thinking_token_budget": budget} if budget is not None else None
    start = time.perf_counter()
    try:  # the raw answer: it is validated here (openai's parse builds its types without checking them)
        raw = await cache[ep.url].chat.completions.with_raw_response.create(
            model=ep.model, messages=messages, temperature=options.temperature, max_tokens=options.max_tokens,
            extra_body=extra, **sampled,
        )  # fmt: skip
        content = raw.http_response.content
    except (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError) as exc:
        if isinstance(exc.__cause__, RmbError):  # the identity check of a new connection: the pool's to handle
            raise exc.__cause__ from None
        headers = getattr(getattr(exc, "response", None), "headers", None)
        overloaded = isinstance(exc, openai.RateLimitError)
        raise RetryableError(f"{ep}: {type(exc).__name__}: {exc}", retry_after_seconds(headers), overloaded) from None
    except openai.APIStatusError as exc:
        if exc.status_code in (408, 409) or exc.status_code >= 500:
            raise RetryableError(f"{ep}: HTTP {exc.status_code}: {exc.message}") from None
        if exc.status_code in (401, 403, 404):
            raise EndpointError(f"{ep}: HTTP {exc.status_code}: {exc.message}") from None
        raise SampleError(f"{ep}: HTTP {exc.status_code}: {exc.message}") from None
    except (openai.OpenAIError, httpx.HTTPError) as exc:  # a body cut off mid-read, a bad encoding
        raise RetryableError(f"{ep}: {type(exc).__name__}: {exc}") from None
    seconds = time.perf_counter() - start
    where = f"{ep.url}/v1/chat/completions"
    return judgement(answer_json(content, where), n, where, seconds)


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
        if mode == "rating" and prompts.rate is None:
            raise ConfigError(f"judge.prompt: {prompts.name} has no rating prompt (this benchmark rates answers one "
                              "by one): use project or reward-bench")  # fmt: skip
        self.pool = pool
        self.prompts = prompts
        self.options = options
        self.mode = mode
        self.pairwise = mode != "rating"
        self.order = "both" if mode == "judgebench" else options.order  # JudgeBench's protocol asks both orders
        self.no_verdict = 0
        self.cut = Counter[str]()  # judgements cut off before a verdict: while thinking, or in the answer
        self.inconsistent = 0
        self.unasked = 0
        self._clients: dict[str, openai.AsyncOpenAI] = {}
        sampled = options.temperature > 0
        self._identity = {
            "kind": "judge",
            "answers": JUDGEMENT_FORMAT,
            "mode": mode,
            "order": self.order if self.pairwise else None,
            "seed": options.seed if (self.pairwise and self.order == "random") or sampled else None,
            "max_tokens": options.max_tokens,
            "reasoning_budget": options.reasoning_budget,
            "samples": options.samples,
            "temperature": options.temperature,
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
        what = {
            "pairwise": "scored 0.5",
            "rating": "rated -1",
            "judgebench": "counted for neither response, as JudgeBench does",
        }[self.mode]
        verdict = "verdict" if self.pairwise else "1-10 rating"
        cut = sum(self.cut.values())
        if cut or self.no_verdict:  # cut off (more tokens might have brought one) apart from none given
            out.append(
                f"{cut + self.no_verdict} judge answer(s) held no {verdict} (cut off at judge.max_tokens "
                f"{self.options.max_tokens}: {cut}, {self.cut['thinking']} of them while thinking; none given: "
                f"{self.no_verdict}): {what}"
            )
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

    async def fingerprint(self, role: str, ep: Endpoint) -> list[float] | None:
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
        asked = (self._pair(ex, *u.payload) if self.pairwise else self._rate(ex, u.payload) for u in units)
        # each unit's questions say which unit they are for (pool/provenance.py)
        return list(await asyncio.gather(*(for_units([i], work) for i, work in enumerate(asked))))

    async def _ask(self, messages: list[dict[str, str]]) -> Judgement:
        """One question's judgement: `judge.samples` answers, and the prompts' follow-up turn for each answer that
        calls for one (JudgeBench's arena-hard asks once more when an answer holds no verdict label)."""
        options, clients = self.options, self._clients
        first = await self.pool.call(lambda ep: ask(ep, messages, options, clients, options.samples))
        again, follow_up = self.prompts.again, self.prompts.follow_up
        if again is None or follow_up is None:
            return first
        redo = [i for i, sample in enumerate(first["samples"]) if again(answer_text(sample))]

        async def turn_two(sample: list[dict[str, Any]]) -> Judgement:
            more = [*messages, {"role": "assistant", "content": sample[0]["content"] or ""},
                    {"role": "user", "content": follow_up}]  # fmt: skip
            return await self.pool.call(lambda ep: ask(ep, more, options, clients))

        replies = await asyncio.gather(*(turn_two(first["samples"][i]) for i in redo))
        return with_follow_ups(first, dict(zip(redo, replies, strict=True)))

    async def _pair(self, ex: Example, chosen: str, rejected: str) -> dict[str, Any]:
        ask_pair = self.prompts.pair
        first = ask_pair(ex.prompt, chosen, rejected)
        if first is None:  # a conversation the prompts cannot hold: no request, no verdict
            return {"unasked": True}
        if self.order == "both":
            second = ask_pair(ex.prompt, rejected, chosen)
            assert second is not None  # the same conversation, the answers swapped
            return {"asked": list(await asyncio.gather(self._ask(first), self._ask(second)))}
        swapped = self.swapped(prompt_text(ex.prompt), chosen, rejected)
        if swapped:
            first = ask_pair(ex.prompt, rejected, chosen)
            assert first is not None
        return {"asked": [await self._ask(first)], "swapped": swapped}

    async def _rate(self, ex: Example, response: str) -> dict[str, Any]:
        assert self.prompts.rate is not None  # checked at start
        return {"asked": [await self._ask(self.prompts.rate(ex.prompt, response, ex.group))]}

    def merge(self, values: list[Any]) -> list[Any]:
        return values

    def read(self, j: Judgement) -> Reading:
        """A judgement's verdict (or rating): the majority of its samples' (the mean of their ratings)."""
        if self.pairwise:
            return read(j, self.prompts.verdict, majority)
        return read(j, parse_rating, mean_rating)

    def reduce(self, value: Any) -> float:
        if value.get("unasked"):
            self.unasked += 1
            return COMBINE[self.mode](None, None) if self.order == "both" else 0.5
        readings = [self.read(j) for j in value["asked"]]
        for reading in readings:
            if reading.cut:
                self.cut[reading.cut] += 1
            elif reading.value is None:
                self.no_verdict += 1
        if not self.pairwise:
            rating = readings[0].value
            return UNRATED if rating is None else float(rating)
        if len(readings) == 2:
            first, second = (r.value for r in readings)
            self.inconsistent += credit(first, False) != credit(second, True)
            return COMBINE[self.mode](first, second)
        return credit(readings[0].value, value["swapped"])

    def _record(self, j: Judgement) -> dict[str, Any]:
        """One judgement in the per-sample details: what was read, why nothing was, and its cost."""
        reading = self.read(j)
        out: dict[str, Any] = {"verdict" if self.pairwise else "rating": reading.value}
        if reading.cut:
            out["cut_off"] = reading.cut
        if reading.votes:
            out["votes"] = reading.votes
        return out | cost(j)

    def details(self, ex: Example, values: list[Any]) -> dict[str, Any] | None:
        asked = [v.get("asked", []) for v in values]
        costs = total(cost(j) for js in asked for j in js)

        def texts(j: Judgement) -> str | list[str]:
            answers = [answer_text(sample) for sample in j["samples"]]
            return answers[0] if len(answers) == 1 else answers

        if self.pairwise:
            answers = [[texts(j) for j in js] if len(js) == 2 else texts(js[0]) if js else None for js in asked]
            records = [[self._record(j) for j in js] for js in asked]
            return {"answers": answers, "judgements": records, "cost": costs}
        n = len(ex.chosen)
        rated = [texts(js[0]) for js in asked]
        ratings = [self._record(js[0]) for js in asked]
        return {
            "answers": {"chosen": rated[:n], "rejected": rated[n:]},
            "judgements": {"chosen": ratings[:n], "rejected": ratings[n:]},
            UNPARSED_RATINGS: sum(r["rating"] is None for r in ratings),
            "cost": costs,
        }
