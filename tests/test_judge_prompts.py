"""`judge.prompt: reward-bench`: the messages a judge is sent and the verdicts read from its answers equal what
reward-bench's own functions produce, run from its installed package (rewardbench 0.1.4, installed by `make
install`); the request path on a real vLLM server; a missing package is one line naming the install."""

from __future__ import annotations

import ast
import asyncio
import json
from pathlib import Path

import httpx
import pytest
from helpers_http import completion, endpoint

from rmbench_client import constants as C
from rmbench_client.benchmarks.reward_bench_2 import constants as rb2_c
from rmbench_client.config.schema import JudgeOptions
from rmbench_client.errors import ConfigError
from rmbench_client.examples import Example
from rmbench_client.model_kinds import judge_prompts
from rmbench_client.model_kinds.judge import JudgeModel
from rmbench_client.model_kinds.judge_prompts import first_of_a_then_b, reward_bench, reward_bench_sources


def upstream(module: str, *names: str) -> dict:
    """reward-bench's own module-level constants and functions `names`, executed from its installed source
    (its imports left out: these functions use none of them)."""
    source = (reward_bench_sources()[1] / module).read_text()
    body = [
        node
        for node in ast.parse(source).body
        if (isinstance(node, ast.FunctionDef) and node.name in names)
        or (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id in names)
    ]
    namespace: dict = {}
    exec(compile(ast.Module(body=body, type_ignores=[]), module, "exec"), namespace)  # noqa: S102
    return namespace


V1 = ("prompt_v2", "prompt_multi_v2", "MTBENCH_V2", "MTBENCH_MULTI_V2", "format_judge_answers", "process_judgement")
V1 += ("OFFSETBIAS_PROMPT", "RELATIVE_PROMPT", "REL_SYSTEM_PROMPT", "AUTOJ_COARSE_SCORE_RUBRIC", "prompt_v2_gemini")


def test_the_installed_release_is_the_one_named():
    assert f"rewardbench=={reward_bench_sources()[0]}" == C.REWARDBENCH_PROMPTS_PACKAGE
    assert reward_bench().name == "reward-bench 0.1.4"


@pytest.mark.parametrize(
    "prompt",
    [
        "What is 2 + 2?\nAnswer {in braces} and \\n escapes.",
        [
            {"role": "user", "content": "Name a prime."},
            {"role": "assistant", "content": "7"},
            {"role": "user", "content": "Another {one}?"},
        ],
    ],  # fmt: skip
)
def test_pair_messages_are_reward_benchs_own(prompt):
    ns = upstream("generative.py", *V1)
    chosen, rejected = "Four {x}, surely.", "Five."
    turns = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
    answer_a = [*turns, {"role": "assistant", "content": chosen}]
    answer_b = [*turns, {"role": "assistant", "content": rejected}]
    system, user = ns["format_judge_answers"](turns[0]["content"], answer_a, answer_b, multi_turn=len(turns) > 1)
    assert reward_bench().pair(prompt, chosen, rejected) == [
        {"role": "system", "content": system},
        {"role": "user", "content": user},
    ]


def test_conversations_beyond_two_turns_are_not_asked():
    long = [{"role": r, "content": c} for r, c in [("user", "a"), ("assistant", "b")] * 2 + [("user", "c")]]
    assert reward_bench().pair(long, "x", "y") is None


@pytest.mark.parametrize(
    "text",
    ["Assistant A is right. [[A]]", "[[B]]", "[[B]] on reflection, no: [[A]]", "[[C]]", "[[ A ]]", "A", "", "[[b]]"],
)
def test_verdicts_are_read_as_reward_bench_reads_them(text):
    expected = upstream("generative.py", *V1)["process_judgement"](text, None)
    assert first_of_a_then_b(text) == (None if expected == "error" else expected)


@pytest.mark.parametrize("subset", ["Factuality", rb2_c.TIES])
def test_rating_messages_are_reward_bench_2s_own(subset):
    ns = upstream("generative_v2.py", "ratings_prompt", "ratings_prompt_ties")
    template = ns["ratings_prompt_ties" if subset == rb2_c.TIES else "ratings_prompt"]
    assert reward_bench().rate("Q {1}?", "R.", subset) == [
        {"role": "user", "content": template.format(prompt="Q {1}?", completion="R.")}
    ]


class _Pool:
    """The pool's `call` on one endpoint backed by an httpx MockTransport (the parsing and message logic only)."""

    def __init__(self, handler) -> None:
        self.client = httpx.AsyncClient(transport=httpx.MockTransport(handler))

    async def call(self, fn):
        return await fn(endpoint("http://judge.test", "judge", self.client, {}))


def test_a_judge_sends_reward_benchs_messages_and_credits_its_verdicts():
    sent: list = []

    def handler(request: httpx.Request) -> httpx.Response:
        messages = json.loads(request.content)["messages"]
        sent.append(messages)
        text = "[[A]]" if "Four" in messages[1]["content"].split("[The Start of Assistant B")[0] else "[[B]]"
        return httpx.Response(200, json=completion(text))

    ex = Example(id="1", benchmark="pairwise", group="default", prompt="2 + 2?", chosen=("Four",), rejected=("Five",))
    judge = JudgeModel(_Pool(handler), JudgeOptions(order="both"), "pairwise", {}, reward_bench())  # type: ignore[arg-type]
    values = asyncio.run(judge.score(ex, judge.units(ex)))
    assert [judge.reduce(v) for v in values] == [1.0]  # the chosen answer wins in both orders
    expected = [reward_bench().pair("2 + 2?", "Four", "Five"), reward_bench().pair("2 + 2?", "Five", "Four")]
    assert sorted(map(json.dumps, sent)) == sorted(map(json.dumps, expected))  # both orders, sent concurrently
    assert (
        judge.identity["prompt"] == "reward-bench 0.1.4" and judge.identity["prompts"] != judge_prompts.project().digest
    )


def test_a_missing_package_is_one_line_naming_the_install(monkeypatch):
    monkeypatch.setattr(judge_prompts.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigError, match=r"pip install --no-deps rewardbench==0\.1\.4$"):
        reward_bench()


def test_a_release_without_the_prompts_is_one_line_naming_the_file(tmp_path, monkeypatch):
    (tmp_path / "generative.py").write_text("prompt_v2 = 'x'\n")
    monkeypatch.setattr(judge_prompts, "reward_bench_sources", lambda: ("9.9", Path(tmp_path)))
    with pytest.raises(ConfigError, match=r"generative\.py defines no MTBENCH_MULTI_V2, MTBENCH_V2, prompt_multi_v2"):
        reward_bench()


@pytest.mark.parametrize(("mode", "credit"), [("pairwise", 0.5), ("judgebench", 0.0)])
def test_a_conversation_the_prompts_cannot_hold_is_not_asked_and_is_counted(mode, credit):
    def handler(request: httpx.Request) -> httpx.Response:
        raise AssertionError("no request expected")

    turns = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2 + 2?"}]
    ex = Example(id="1", benchmark="pairwise", group="default", prompt=turns, chosen=("4",), rejected=("5",))
    judge = JudgeModel(_Pool(handler), JudgeOptions(), mode, {}, reward_bench())  # type: ignore[arg-type]
    values = asyncio.run(judge.score(ex, judge.units(ex)))
    assert [judge.reduce(v) for v in values] == [credit]
    assert judge.warnings == [
        "1 comparison(s) were scored without asking: reward-bench 0.1.4's prompts hold a one- or two-turn "
        "conversation without a system message, as its scripts do"
    ]


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("Mine first... My final verdict is: [[A>>B]]", "A"),
        ("[[A>B]] and again [[A>B]]", "A"),  # one distinct label
        ("[[B>A]]", "B"),
        ("[[B>>A]]", "B"),
        ("My final verdict is tie: [[A=B]]", "C"),
        ("[[A>B]] or rather [[B>A]]", None),  # several distinct labels: none (JudgeBench does not ask again)
        ("[[A>>B]] ... [[A>B]]", None),  # distinct as written, though both read A>B
        ("[[A]]", None),  # a label JudgeBench's metric counts for neither answer
        ("no label", None),
    ],
)
def test_judgebench_arena_hard_verdicts_are_read_as_its_get_score_reads_them(text, verdict):
    assert judge_prompts.arena_hard_verdict(text) == verdict


@pytest.mark.parametrize(
    ("text", "verdict"),
    [("Output (a)", "A"), ("  Output (b)\n", "B"), ("Output (a).", None), ("output (a)", None), ("", None)],
)
def test_judgebench_vanilla_verdicts_are_its_exact_answers(text, verdict):
    assert judge_prompts.vanilla_verdict(text) == verdict


def test_judgebench_messages_are_its_templates_rendered_once():
    """A placeholder inside an answer stays as written (jinja2 renders the template's own placeholders only)."""
    arena = judge_prompts.judgebench().pair("What is 2+2?", "It is {{answer_b}}.", "4")
    assert arena is not None and arena[0] == {"role": "system", "content": judge_prompts.ARENA_HARD_SYSTEM}
    assert arena[1] == {"role": "user", "content": (
        "<|User Prompt|>\nWhat is 2+2?\n\n<|The Start of Assistant A's Answer|>\nIt is {{answer_b}}.\n"
        "<|The End of Assistant A's Answer|>\n\n<|The Start of Assistant B's Answer|>\n4\n"
        "<|The End of Assistant B's Answer|>")}  # fmt: skip
    vanilla = judge_prompts.judgebench_vanilla().pair("Q?", "a1", "b1")
    assert vanilla is not None and len(vanilla) == 1 and vanilla[0]["role"] == "user"
    assert "# Instruction:\nQ?\n# Output (a):\na1\n# Output (b):\nb1\n# Which is better" in vanilla[0]["content"]
    assert judge_prompts.judgebench().again("Hmm.") and not judge_prompts.judgebench().again("[[A=B]]")
