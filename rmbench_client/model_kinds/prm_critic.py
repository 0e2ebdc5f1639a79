"""A process reward model as a generative critic, asked as ProcessBench asks one.

Source: QwenLM/ProcessBench, commit e8024636bcabdf8bd514440551b531d3f90dd18b, `code/run_eval.py` and
`code/templates/critique_template.txt`. Each step is wrapped as `<paragraph_i>\\n{step}\\n</paragraph_i>\\n\\n` (i from
0), the whole stripped, and put with the problem into the critique template (`str.format`, so its `\\boxed{{}}`
reads `\\boxed{}`), the only, user, message; temperature 0 and `prm.max_tokens` new tokens (8,192 there). The answer
is the last `\\boxed{...}` of the critique (`\\\\boxed\\{([^}]*)\\}`), stripped, as an integer; anything else is no
answer. The request is the judge's (model_kinds/judge.py `ask`); where it returns a whole judgement (judges that
think), the critique is its answer after the thinking.

As per-step scores (the process contract): answer -1 (no wrong paragraph) scores every step 1; answer i scores
steps 0..i-1 as 1 and step i as 0, and nothing after it (the critic says nothing of later steps: a shorter list);
no answer, or an index outside the solution, scores no step (an empty list), which can match no label, as
ProcessBench's `pred == label` with a None or out-of-range prediction never does. The critique and the answer read
from it are kept in the stored value and the sample's details. A critique without an answer that ended at
`prm.max_tokens` (`finish_reason: length`) is *cut off* (while thinking, when its thinking was never closed), as a
judge's answer is: counted apart in the run's warning and marked `cut_off` in its details, since more tokens might
have brought an answer.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections import Counter
from typing import Any

from ..backends.base import Endpoint
from ..config.schema import JudgeOptions, PrmOptions
from ..examples import Example, Message, prompt_text
from ..pool.endpoint_pool import EndpointPool
from ..pool.provenance import for_units
from .base import Unit
from .judge import ask
from .judge_answers import answer_text, cut_off
from .prm import StepScores

SOURCE = "QwenLM/ProcessBench@e8024636bcabdf8bd514440551b531d3f90dd18b code/templates/critique_template.txt"
# the template as that file holds it (its trailing newline stripped, as run_eval.py strips it); ProcessBench has
# no package to read it from, so it is here, with its source, and the run's identity hashes it
CRITIQUE_TEMPLATE = (
    "The following is a math problem and a solution (split into paragraphs, enclosed with tags and indexed from 0):"
    "\n\n[Math Problem]\n\n{problem}\n\n[Solution]\n\n{tagged_response}\n\nYour task is to review and critique the "
    "solution paragraph by paragraph. Once you identify an error in a paragraph, return the index of the paragraph "
    'where the earliest error occurs. Otherwise, return the index of -1 (which typically denotes "not found").\n\n'
    "Please put your final answer (i.e., the index) in \\boxed{{}}."
)
_BOXED = re.compile(r"\\boxed\{([^}]*)\}")


def critique_messages(problem: str, steps: tuple[str, ...]) -> list[Message]:
    """ProcessBench's `prepare_input_boxed`: the paragraphs tagged and indexed from 0, in the template."""
    tagged = "".join(f"<paragraph_{i}>\n{step}\n</paragraph_{i}>\n\n" for i, step in enumerate(steps)).strip()
    return [{"role": "user", "content": CRITIQUE_TEMPLATE.format(problem=problem, tagged_response=tagged)}]


def boxed_index(text: str | None) -> int | None:
    """ProcessBench's `extract_answer` then `int()`: the last boxed answer as an integer, else None."""
    found = _BOXED.findall(text or "")
    if not found:
        return None
    try:
        return int(found[-1].strip())
    except ValueError:
        return None


def critique(answer: Any) -> str | None:
    """The critique in the judgement judge.ask returns (stored whole): its first sample's answer after the
    thinking."""
    return None if answer is None else answer_text(answer["samples"][0])


def cut(value: dict[str, Any]) -> str | None:
    """'thinking' or 'answer' for a stored critique that gave no answer because it ran out of `prm.max_tokens`
    (while thinking, or after it), else None."""
    if value["prediction"] is not None or value["answer"] is None:
        return None
    return cut_off(value["answer"]["samples"][0])


def step_scores(prediction: int | None, steps: int) -> list[float]:
    """The critic's answer as per-step scores (see the module docstring)."""
    if prediction == -1:
        return [1.0] * steps
    if prediction is None or not 0 <= prediction < steps:
        return []
    return [1.0] * prediction + [0.0]


class CriticPrm:
    """A chat model that names the earliest wrong paragraph of a solution."""

    pairwise = False
    process = True

    def __init__(self, pool: EndpointPool, options: PrmOptions, served: dict[str, Any]) -> None:
        self.pool = pool
        self.request = JudgeOptions(max_tokens=options.max_tokens)  # what judge.ask reads of its options
        self.unanswered = 0  # critiques that scored no step: no answer, or an index outside the solution
        self.cut = Counter[str]()  # of them, those cut off at max_tokens: while thinking, or in the answer
        self.max_tokens = options.max_tokens
        self._clients: dict[str, Any] = {}
        digest = hashlib.sha256(CRITIQUE_TEMPLATE.encode()).hexdigest()[:16]
        self._identity = {
            "kind": "prm",
            "method": "critic",
            "prompt": SOURCE,
            "prompt_digest": digest,
            "max_tokens": options.max_tokens,
            # a chat model's answers cannot be fingerprinted cheaply: the identity is what the server reports
            "models": {"prm": {"served": served, "fingerprint": None}},
        }

    async def fingerprint(self, role: str, ep: Endpoint) -> list[float] | None:
        return None  # none taken: its identity is what the server reports

    @property
    def identity(self) -> dict[str, Any]:
        return self._identity

    @property
    def warnings(self) -> list[str]:
        if not self.unanswered:
            return []
        cut = sum(self.cut.values())
        return [f"{self.unanswered} critique(s) gave no paragraph index in \\boxed{{}} (cut off at prm.max_tokens "
                f"{self.max_tokens}: {cut}, {self.cut['thinking']} of them while thinking; none given or one outside "
                f"the solution: {self.unanswered - cut}): no step scored, as ProcessBench counts no match"]  # fmt: skip

    async def check(self) -> None:
        return None

    def units(self, ex: Example) -> list[Unit]:
        messages = critique_messages(prompt_text(ex.prompt), ex.steps)
        return [Unit(messages[0]["content"], messages)]

    async def score(self, ex: Example, units: list[Unit]) -> list[Any]:
        answers = await asyncio.gather(*(for_units([i], self._ask(u.payload)) for i, u in enumerate(units)))
        out = []
        for answer in answers:  # stored whole: the judge's judgement, its thinking and costs included
            prediction = boxed_index(critique(answer))
            out.append({"steps": step_scores(prediction, len(ex.steps)), "prediction": prediction,
                        "answer": answer})  # fmt: skip
        return out

    async def _ask(self, messages: list[Message]) -> Any:
        return await self.pool.call(lambda ep: ask(ep, messages, self.request, self._clients))

    def merge(self, values: list[Any]) -> list[Any]:
        for v in values:  # counted here: a resumed run reports stored ones too
            if not v["steps"]:
                self.unanswered += 1
                if (why := cut(v)) is not None:
                    self.cut[why] += 1
        return [StepScores(v) for v in values]

    def reduce(self, value: Any) -> float:
        return min(value, default=0.0)

    def details(self, ex: Example, values: list[Any]) -> dict[str, Any] | None:
        value = values[0].value
        out = {"prediction": value["prediction"], "answer": critique(value["answer"])}
        return out | ({"cut_off": why} if (why := cut(value)) is not None else {})
