"""What a generative judge is asked, and how its answer is read: the project's own prompts (`judge.prompt:
project`), reward-bench's (`reward-bench`) or JudgeBench's (`judgebench`: its arena-hard judge; `judgebench-vanilla`).

reward-bench's prompts are read from its installed package (`pip install --no-deps rewardbench==0.1.4`), never
copied here: the module-level string constants of `rewardbench/generative.py` (MT-Bench's pairwise prompts) and
`rewardbench/generative_v2.py` (RewardBench 2's rating prompts) are evaluated from the source with `ast`, without
importing it (its imports pull in anthropic, google-generativeai, fastchat and together). They are used as
reward-bench's scripts use them (`scripts/run_generative.py`, `scripts/run_generative_v2.py` in the same release):
a system message with MT-Bench's `pair-v2` prompt and a user message with its template, the two-turn variant for a
two-turn conversation, and no request at all beyond two turns (credited 0.5, as its API path does); the verdict is
`A` when the answer contains `[[A]]`, else `B` when it contains `[[B]]`, else none (no tie). A rating is asked with
`ratings_prompt` (`ratings_prompt_ties` on the Ties subset) as the only, user, message.

JudgeBench's two prompt-only judges (ScalerLab/JudgeBench at e2c52c2, `utils/judges.py`) are kept here as data, their
texts those of its templates (compared by hand with jinja2's rendering of the files at that commit): `judgebench` is
`ArenaHard` (arena-hard-auto's system prompt; the verdict is the one distinct `[[A>B]]`-style label in the answer,
`>>` read as `>`, `A=B` a tie; an answer without a label is followed by one more turn asking for it, and the label is
read from both turns), `judgebench-vanilla` is `Vanilla` (one user message; the answer must be exactly
"Output (a)" or "Output (b)"). JudgeBench asks arena-hard with max_tokens 4096 and vanilla with 1024 (judge.max_tokens
here). Neither has a rating prompt. A conversation is given as the project's prompts give it (`prompt_text`);
JudgeBench's own questions are single turns.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import importlib.util
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import constants as C
from ..errors import ConfigError
from ..examples import Prompt, conversation, prompt_text

Messages = list[dict[str, str]]
# reward-bench's v2 judges rate the answers of this subset (RewardBench 2's Ties) with their ties prompt
REWARDBENCH_TIES_SUBSET = "Ties"

SYSTEM = (
    "You are a careful, impartial evaluator. You will see a user's question and two answers written by AI "
    "assistants. Decide which answer serves the user better: judge correctness first, then helpfulness, "
    "relevance and safety. Ignore the order in which the answers appear, their length and their formatting, "
    "except where these change how well the question is answered. Explain your reasoning briefly, then give "
    'your verdict on the last line in exactly this form: "[[A]]" if answer A is better, "[[B]]" if answer B is '
    'better, "[[C]]" for a tie.'
)
USER = "[Question]\n{prompt}\n\n[Answer A]\n{a}\n\n[Answer B]\n{b}\n\nWhich answer is better?"
RATING = (
    "Judge the quality of the response an AI assistant gave to the user's query below: its correctness first, "
    "then its helpfulness, relevance and safety. Be impartial; the response's length and formatting matter only "
    "where they change how well it answers. Give a short explanation, then rate the response on a scale of 1 to "
    "10 and end your answer with that number alone: no markdown, and nothing after the number.\n\n"
    "[Query]\n{prompt}\n\n[Response]\n{response}\n\n[Your judgement]"
)
_VERDICT = re.compile(r"\[\[\s*([ABC])\s*\]\]")


def last_verdict(text: str | None) -> str | None:
    """'A', 'B', 'C' (tie) from the last verdict tag in the text, or None (the project's reading)."""
    found = _VERDICT.findall(text or "")
    return found[-1] if found else None


def first_of_a_then_b(text: str | None) -> str | None:
    """reward-bench's reading: 'A' if `[[A]]` occurs anywhere, else 'B' if `[[B]]` does, else None."""
    text = text or ""
    return "A" if "[[A]]" in text else "B" if "[[B]]" in text else None


@dataclass(frozen=True)
class JudgePrompts:
    name: str  # what the run's identity and summary name
    pair: Callable[[Prompt, str, str], Messages | None]  # compare a (shown first) with b; None: cannot be asked
    verdict: Callable[[str | None], str | None]  # 'A', 'B', 'C' (tie) or None, from the answer after the thinking
    rate: Callable[[Prompt, str, str], Messages] | None  # (prompt, response, subset); None: no rating prompt
    texts: tuple[str, ...]  # every prompt text: the identity's hash covers them
    rating_by_subset: bool = False  # the rating prompt depends on the subset (reward-bench's Ties)
    # a second turn, asked when `again` holds for the first answer (JudgeBench's arena-hard judge)
    again: Callable[[str], bool] | None = None
    follow_up: str | None = None

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(list(self.texts)).encode()).hexdigest()[:16]


def project() -> JudgePrompts:
    def pair(prompt: Prompt, a: str, b: str) -> Messages:
        user = USER.format(prompt=prompt_text(prompt), a=a, b=b)
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]

    def rate(prompt: Prompt, response: str, subset: str) -> Messages:
        return [{"role": "user", "content": RATING.format(prompt=prompt_text(prompt), response=response)}]

    return JudgePrompts("project", pair, last_verdict, rate, (SYSTEM, USER, RATING))


def _constants(path: Path, names: set[str]) -> dict[str, Any]:
    """The module-level constants `names` of a Python source file, evaluated without running it (a dict's
    values may name an earlier constant)."""
    found: dict[str, Any] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name, value = node.targets[0].id, node.value
        if name not in names:
            continue
        if isinstance(value, ast.Dict):
            found[name] = {
                ast.literal_eval(k): found[v.id] if isinstance(v, ast.Name) else ast.literal_eval(v)
                for k, v in zip(value.keys, value.values, strict=True)
                if k is not None
            }
        else:
            found[name] = ast.literal_eval(value)
    if missing := names - found.keys():
        raise ConfigError(f"judge.prompt: reward-bench: {path} defines no {', '.join(sorted(missing))}")
    return found


def reward_bench_sources() -> tuple[str, Path]:
    """The installed rewardbench package's version and directory, or a ConfigError naming the install."""
    spec = importlib.util.find_spec("rewardbench")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "judge.prompt: reward-bench reads reward-bench's prompts from its package: "
            f"pip install --no-deps {C.REWARDBENCH_PROMPTS_PACKAGE}"
        )
    return importlib.metadata.version("rewardbench"), Path(next(iter(spec.submodule_search_locations)))


def reward_bench() -> JudgePrompts:
    version, package = reward_bench_sources()
    v1 = _constants(package / "generative.py", {"prompt_v2", "prompt_multi_v2", "MTBENCH_V2", "MTBENCH_MULTI_V2"})
    v2 = _constants(package / "generative_v2.py", {"ratings_prompt", "ratings_prompt_ties"})
    single, multi = v1["MTBENCH_V2"], v1["MTBENCH_MULTI_V2"]

    def pair(prompt: Prompt, a: str, b: str) -> Messages | None:
        turns_a, turns_b = conversation(prompt, a), conversation(prompt, b)
        roles = [m["role"] for m in turns_a]
        if roles == ["user", "assistant"]:
            user = single["prompt_template"].format(question=turns_a[0]["content"], answer_a=a, answer_b=b)
            return [{"role": "system", "content": single["system_prompt"]}, {"role": "user", "content": user}]
        if roles == ["user", "assistant", "user", "assistant"]:
            user = multi["prompt_template"].format(
                question_1=turns_a[0]["content"],
                question_2=turns_a[2]["content"],
                answer_a_1=turns_a[1]["content"],
                answer_b_1=turns_b[1]["content"],
                answer_a_2=a,
                answer_b_2=b,
            )
            return [{"role": "system", "content": multi["system_prompt"]}, {"role": "user", "content": user}]
        return None  # longer conversations: reward-bench credits 0.5 without asking

    def rate(prompt: Prompt, response: str, subset: str) -> Messages:
        template = v2["ratings_prompt_ties" if subset == REWARDBENCH_TIES_SUBSET else "ratings_prompt"]
        question = conversation(prompt)[0]["content"]  # the first turn, as reward-bench asks (one turn only)
        return [{"role": "user", "content": template.format(prompt=question, completion=response)}]

    texts = (single["system_prompt"], single["prompt_template"], multi["system_prompt"], multi["prompt_template"],
             v2["ratings_prompt"], v2["ratings_prompt_ties"])  # fmt: skip
    return JudgePrompts(f"reward-bench {version}", pair, first_of_a_then_b, rate, texts, rating_by_subset=True)


# JudgeBench's judges (ScalerLab/JudgeBench, commit e2c52c284e735e139b3daa61c206ee208f36c461): the prompt texts of
# utils/templates/arena_hard_judge_system.jinja2, arena_hard_judge_prompt.jinja2 and vanilla_prompt.jinja2 (rendered
# by utils/prompts.py with jinja2: the placeholders replaced once, no trailing newline), used as utils/judges.py's
# `ArenaHard` and `Vanilla` use them.
ARENA_HARD_SYSTEM = (
    "Please act as an impartial judge and evaluate the quality of the responses provided by two AI assistants to "
    "the user prompt displayed below. You will be given assistant A's answer and assistant B's answer. Your job is "
    "to evaluate which assistant's answer is better.\n\n"
    "Begin your evaluation by generating your own answer to the prompt. You must provide your answers before "
    "judging any answers.\n\n"
    "When evaluating the assistants' answers, compare both assistants' answers with your answer. You must identify "
    "and correct any mistakes or inaccurate information.\n\n"
    "Then consider if the assistant's answers are helpful, relevant, and concise. Helpful means the answer "
    "correctly responds to the prompt or follows the instructions. Note when user prompt has any ambiguity or more "
    "than one interpretation, it is more helpful and appropriate to ask for clarifications or more information from "
    "the user than providing an answer based on assumptions. Relevant means all parts of the response closely "
    "connect or are appropriate to what is being asked. Concise means the response is clear and not verbose or "
    "excessive.\n\n"
    "Then consider the creativity and novelty of the assistant's answers when needed. Finally, identify any missing "
    "important information in the assistants' answers that would be beneficial to include when responding to the "
    "user prompt.\n\n"
    "After providing your explanation, you must output only one of the following choices as your final verdict "
    "with a label:\n\n"
    "1. Assistant A is significantly better: [[A>>B]]\n"
    "2. Assistant A is slightly better: [[A>B]]\n"
    "3. Tie, relatively the same: [[A=B]]\n"
    "4. Assistant B is slightly better: [[B>A]]\n"
    "5. Assistant B is significantly better: [[B>>A]]\n\n"
    'Example output: "My final verdict is tie: [[A=B]]".'
)
ARENA_HARD_USER = (
    "<|User Prompt|>\n{{prompt}}\n\n"
    "<|The Start of Assistant A's Answer|>\n{{answer_a}}\n<|The End of Assistant A's Answer|>\n\n"
    "<|The Start of Assistant B's Answer|>\n{{answer_b}}\n<|The End of Assistant B's Answer|>"
)
# `ArenaHard.get_judgment`: asked again, once, in the same conversation when the answer holds no label
ARENA_HARD_FOLLOW_UP = "continue your judgment and finish by outputting a final verdict label"
VANILLA = (
    "You are a helpful assistant in evaluating the quality of the outputs for a given instruction. Your goal is to "
    "select the best output for the given instruction.\n"
    "Select the Output (a) or Output (b) that is better for the given instruction. The two outputs are generated by "
    "two different AI chatbots respectively.\n"
    "Do NOT provide any explanation for your choice.\n"
    "Do NOT say both / neither are good.\n"
    'You should answer using ONLY "Output (a)" or "Output (b)". Do NOT output any other words.\n'
    "# Instruction:\n{{question}}\n"
    "# Output (a):\n{{answer_a}}\n"
    "# Output (b):\n{{answer_b}}\n"
    '# Which is better, Output (a) or Output (b)? Your response should be either "Output (a)" or "Output (b)":'
)
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_ARENA_LABEL = re.compile(r"\[\[([AB<>=]+)\]\]")
ARENA_DECISIONS = {"A>B": "A", "B>A": "B", "A=B": "C"}  # JudgeBench's decisions as this project's verdicts


def render(template: str, **values: str) -> str:
    """A JudgeBench template with its `{{name}}` placeholders replaced in one pass (as jinja2 renders them: a
    placeholder inside an inserted answer stays as it is)."""
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def arena_hard_verdict(text: str | None) -> str | None:
    """`ArenaHard.get_score`: the one distinct `[[...]]` label of the judgement ('>>' read as '>'); none, or
    several different ones, is no verdict; a label other than A>B, B>A, A=B counts for neither answer."""
    labels = set(_ARENA_LABEL.findall(text or ""))
    return ARENA_DECISIONS.get(labels.pop().replace(">>", ">")) if len(labels) == 1 else None


def vanilla_verdict(text: str | None) -> str | None:
    """`Vanilla.extract_pairwise_result`: exactly "Output (a)" or "Output (b)" once stripped, else no verdict."""
    return {"Output (a)": "A", "Output (b)": "B"}.get((text or "").strip())


def judgebench() -> JudgePrompts:
    """JudgeBench's arena-hard judge: its system prompt, the question and two answers, one follow-up turn."""

    def pair(prompt: Prompt, a: str, b: str) -> Messages:
        user = render(ARENA_HARD_USER, prompt=prompt_text(prompt), answer_a=a, answer_b=b)
        return [{"role": "system", "content": ARENA_HARD_SYSTEM}, {"role": "user", "content": user}]

    def again(answer: str) -> bool:
        return not _ARENA_LABEL.search(answer)

    texts = (ARENA_HARD_SYSTEM, ARENA_HARD_USER, ARENA_HARD_FOLLOW_UP)
    return JudgePrompts(
        "judgebench", pair, arena_hard_verdict, None, texts, again=again, follow_up=ARENA_HARD_FOLLOW_UP
    )


def judgebench_vanilla() -> JudgePrompts:
    """JudgeBench's vanilla judge: one user message, the answer "Output (a)" or "Output (b)"."""

    def pair(prompt: Prompt, a: str, b: str) -> Messages:
        return [{"role": "user", "content": render(VANILLA, question=prompt_text(prompt), answer_a=a, answer_b=b)}]

    return JudgePrompts("judgebench-vanilla", pair, vanilla_verdict, None, (VANILLA,))


PROMPTS: dict[str, Callable[[], JudgePrompts]] = {
    "project": project,
    "reward-bench": reward_bench,
    "judgebench": judgebench,
    "judgebench-vanilla": judgebench_vanilla,
}
