"""A judge's answers through whole runs against a loopback judge answering in vLLM's shapes: malformed and error
answers fail their prompt (never a tie) and are asked again by the next run; verdicts are read after the thinking
only; answers cut off are counted apart; tokens and time are recorded; several samples vote; JudgeBench's
arena-hard follow-up turn; a patch release of the server keeps the stored judgements."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers_http import FakeJudge, JudgeAnswer, chat_answer

from rmbench_client.config.schema import RunConfig
from rmbench_client.errors import ConfigError
from rmbench_client.model_kinds.judge_answers import cost, judgement, majority, read, run_cost, split
from rmbench_client.model_kinds.judge_prompts import last_verdict
from rmbench_client.run.runner import run
from rmbench_client.run.score_store import ScoreStore

GOOD, BAD = "The right answer, GOOD.", "A wrong answer, BAD."


def pairs(tmp_path: Path, prompts: list[str]) -> Path:
    path = tmp_path / "prefs.jsonl"
    path.write_text(
        "".join(json.dumps({"id": p, "prompt": p, "chosen": GOOD, "rejected": BAD}) + "\n" for p in prompts)
    )
    return path


def judge_run(url: str, data: Path, out: Path, **judge: object):
    cfg = RunConfig.from_data({
        "model": "fake-judge", "type": "judge", "benchmark": "pairwise", "data": str(data), "out": str(out),
        "roles": {"judge": {"endpoints": [url], "served_model": "judge"}}, "judge": judge,
        "client": {"max_retries": 0},
    })  # fmt: skip
    return run(cfg, progress=False)


def letters(body: dict) -> tuple[str, str]:
    """(the chosen answer's letter, the rejected one's) in the question the judge was sent."""
    user = body["messages"][-1]["content"] if body["messages"][-1]["role"] == "user" else ""
    user = next(m["content"] for m in body["messages"] if "GOOD" in m["content"]) if "GOOD" not in user else user
    return ("A", "B") if user.index("GOOD") < user.index("BAD") else ("B", "A")


def healthy(body: dict) -> JudgeAnswer:
    good, _ = letters(body)
    return 200, chat_answer(f"Clearly better. [[{good}]]"), "application/json"


MALFORMED = {
    "html": (200, b"<html><body>502 Bad Gateway</body></html>", "text/html"),
    "invalid json": (200, b'{"choices": [{"message": ', "application/json"),
    "message null": (
        200,
        chat_answer("x") | {"choices": [{"index": 0, "message": None, "finish_reason": "stop"}]},
        "application/json",
    ),  # fmt: skip
    "error with 200": (
        200,
        {"error": {"message": "model overloaded", "type": "BadRequestError", "code": 400}},
        "application/json",
    ),  # fmt: skip
    "no choices": (200, {"id": "chatcmpl-1", "object": "chat.completion", "model": "judge"}, "application/json"),
    "content not text": (
        200,
        chat_answer("x") | {"choices": [{"index": 0, "message": {"content": 5}}]},
        "application/json",
    ),  # fmt: skip
}


@pytest.mark.parametrize("kind", list(MALFORMED))
def test_a_malformed_answer_fails_its_prompt_and_the_next_run_asks_again(tmp_path, kind):
    """No traceback, no tie: every prompt is a failure, nothing is stored, the outputs are written; against a
    healthy judge the rerun sends every prompt again and scores them."""
    data = pairs(tmp_path, ["q1", "q2"])
    with FakeJudge(lambda body: MALFORMED[kind]) as judge:
        first = judge_run(judge.url, data, tmp_path / "run")
        assert set(first.failures) == {"q1", "q2"} and first.summary["scored"] == 0
        assert first.summary["failed"] == 2 and first.summary["complete"] is False
        assert (tmp_path / "run" / "failures.jsonl").read_text().count("\n") == 2
        store = ScoreStore(tmp_path / "run" / "scores.sqlite", read_only=True)
        assert store.count() == 0  # nothing stored: no verdict, no tie
        store.close()
        judge.answer = healthy
        asked = len(judge.requests)
        second = judge_run(judge.url, data, tmp_path / "run")
    assert len(judge.requests) - asked == 2 and second.sent_sequences == 2
    assert second.all_scored and second.summary["accuracy"] == 1.0


def test_an_error_answer_that_asks_for_a_retry_is_retried(tmp_path):
    """HTTP 200 with an error coded 503 is retried like a 503; the retry's answer counts."""
    answers = iter([(200, {"error": {"message": "busy", "code": 503}}, "application/json")])
    data = pairs(tmp_path, ["q1"])
    with FakeJudge(lambda body: next(answers, None) or healthy(body)) as judge:
        cfg = RunConfig.from_data({
            "model": "fake-judge", "type": "judge", "benchmark": "pairwise", "data": str(data),
            "out": str(tmp_path / "run"), "roles": {"judge": {"endpoints": [judge.url], "served_model": "judge"}},
            "client": {"max_retries": 2},
        })  # fmt: skip
        result = run(cfg, progress=False)
    assert result.all_scored and len(judge.requests) == 2 and result.summary["accuracy"] == 1.0


USAGE = {"prompt_tokens": 100, "completion_tokens": 60, "total_tokens": 160}
SPLIT_USAGE = USAGE | {"completion_tokens_details": {"reasoning_tokens": 45}}


def thinking(body: dict) -> JudgeAnswer:
    """Each prompt names the shape its answer takes; the thinking always votes for the wrong answer."""
    good, bad = letters(body)
    shape = re.search(r"shape:([\w-]+)", json.dumps(body["messages"])).group(1)  # type: ignore[union-attr]
    answers = {
        # vLLM's reasoning parser: the thinking in `reasoning`, the answer in `content`
        "split": chat_answer(f"[[{good}]]", reasoning=f"Maybe [[{bad}]]?", usage=SPLIT_USAGE),
        "split-old": chat_answer(f"[[{good}]]", reasoning=f"[[{bad}]]", field="reasoning_content", usage=SPLIT_USAGE),
        # no parser: the thinking in the text; the answer after it holds no verdict
        "text": chat_answer(f"<think>Surely [[{bad}]].</think>\nI cannot decide.", usage=USAGE),
        # the template opened the thinking: only its end is in the text
        "text-opened": chat_answer(f"Hmm, [[{bad}]]?</think>[[{good}]]", usage=USAGE),
        # out of tokens while thinking, split by the server and in the text
        "cut-split": chat_answer(None, reasoning=f"[[{bad}]] and then", finish="length", usage=SPLIT_USAGE),
        "cut-text": chat_answer(f"<think>[[{bad}]] and then", finish="length", usage=USAGE),
        # out of tokens after the thinking; and a finished answer without a verdict
        "cut-answer": chat_answer(f"<think>fine</think>Answer {good} is", finish="length", usage=USAGE),
        "none": chat_answer("Both are fine.", usage=USAGE),
    }
    return 200, answers[shape], "application/json"


def test_verdicts_are_read_after_the_thinking_and_cut_off_answers_counted_apart(tmp_path):
    shapes = ["split", "split-old", "text", "text-opened", "cut-split", "cut-text", "cut-answer", "none"]
    data = pairs(tmp_path, [f"shape:{s}" for s in shapes])
    with FakeJudge(thinking) as judge:
        result = judge_run(judge.url, data, tmp_path / "run", order="both")
    assert result.all_scored
    lines = {x["id"]: x for x in map(json.loads, (result.out_dir / "samples.jsonl").read_text().splitlines())}
    credit = {s: lines[f"shape:{s}"]["results"] for s in shapes}
    assert credit == {"split": 1.0, "split-old": 1.0, "text": 0.5, "text-opened": 1.0, "cut-split": 0.5,
                      "cut-text": 0.5, "cut-answer": 0.5, "none": 0.5}  # fmt: skip
    records = {s: lines[f"shape:{s}"]["details"]["judgements"][0] for s in shapes}
    assert [r.get("cut_off") for r in records["cut-split"] + records["cut-text"]] == ["thinking"] * 4
    assert [r.get("cut_off") for r in records["cut-answer"]] == ["answer"] * 2
    assert all("cut_off" not in r and r["verdict"] is None for r in records["text"] + records["none"])
    assert result.summary["warnings"] == [
        "10 judge answer(s) held no verdict (cut off at judge.max_tokens 1024: 6, 4 of them while thinking; "
        "none given: 4): scored 0.5"
    ]
    # tokens: the server's count of thinking where it split it; none where the thinking was only in the text
    first, second = records["split"]  # chosen shown as A, then as B
    assert (first["verdict"], second["verdict"]) == ("A", "B") and first["seconds"] > 0
    assert {k: first[k] for k in ("prompt_tokens", "reasoning_tokens", "answer_tokens", "requests")} == {
        "prompt_tokens": 100, "reasoning_tokens": 45, "answer_tokens": 15, "requests": 1}  # fmt: skip
    assert records["none"][0]["reasoning_tokens"] == 0 and records["none"][0]["answer_tokens"] == 60
    assert records["text"][0]["reasoning_tokens"] is None and records["text"][0]["answer_tokens"] is None
    assert all(r["seconds"] > 0 for rs in records.values() for r in rs)
    spent = result.summary["judge_cost"]
    assert spent["total"]["prompt_tokens"] == 100 * 16 and spent["total"]["requests"] == 16
    assert spent["total"]["reasoning_tokens"] is None  # some thinking went uncounted
    assert spent["median_per_prompt"]["prompt_tokens"] == 200 and spent["prompts"] == 8
    per_prompt = sorted(lines[f"shape:{s}"]["details"]["cost"]["seconds"] for s in shapes)
    assert spent["median_per_prompt"]["seconds"] == pytest.approx((per_prompt[3] + per_prompt[4]) / 2)
    # the answers shown are those after the thinking
    assert lines["shape:split"]["details"]["answers"][0][0] in ("[[A]]", "[[B]]")
    assert lines["shape:text"]["details"]["answers"][0] == ["\nI cannot decide."] * 2


def test_the_request_carries_the_judge_settings(tmp_path):
    data = pairs(tmp_path, ["q1"])
    with FakeJudge(healthy) as judge:
        judge_run(judge.url, data, tmp_path / "run", max_tokens=300, reasoning_budget=200)
    body = judge.requests[0]
    assert body["max_tokens"] == 300 and body["thinking_token_budget"] == 200 and body["temperature"] == 0.0
    assert "n" not in body and "seed" not in body


def voting(body: dict) -> JudgeAnswer:
    good, bad = letters(body)
    votes = {"q-win": [good, bad, good], "q-split": [good, bad, None, None], "q-none": [None] * 3}
    prompt = next(k for k in votes if k in json.dumps(body["messages"]))
    texts = [f"[[{v}]]" if v else "No idea." for v in votes[prompt]][: body["n"]]
    texts += ["No idea."] * (body["n"] - len(texts))
    return 200, chat_answer(*texts, usage=USAGE), "application/json"


def test_several_samples_vote_and_a_split_vote_is_a_tie(tmp_path):
    data = pairs(tmp_path, ["q-win", "q-split", "q-none"])
    with FakeJudge(voting) as judge:
        result = judge_run(judge.url, data, tmp_path / "run", samples=4, temperature=0.7, seed=3)
    assert all(b["n"] == 4 and b["seed"] == 3 and b["temperature"] == 0.7 for b in judge.requests)
    lines = {x["id"]: x for x in map(json.loads, (result.out_dir / "samples.jsonl").read_text().splitlines())}
    assert {k: v["results"] for k, v in lines.items()} == {"q-win": 1.0, "q-split": 0.5, "q-none": 0.5}
    record = lines["q-win"]["details"]["judgements"][0][0]
    assert sorted(record["votes"].values()) == [1, 1, 2] and len(lines["q-win"]["details"]["answers"][0]) == 4
    assert lines["q-split"]["details"]["judgements"][0][0]["verdict"] == "C"


def test_fewer_choices_than_samples_fail_the_prompt(tmp_path):
    data = pairs(tmp_path, ["q1"])
    with FakeJudge(lambda body: (200, chat_answer("[[A]]"), "application/json")) as judge:
        result = judge_run(judge.url, data, tmp_path / "run", samples=2, temperature=1.0)
    assert "1 choice(s) for n=2" in result.failures["q1"]


def test_greedy_samples_are_refused():
    with pytest.raises(ValueError, match="judge.temperature above 0"):
        RunConfig.from_data({"model": "j", "type": "judge", "roles": {"judge": {"endpoints": ["http://h:1"],
                             "served_model": "j"}}, "judge": {"samples": 3}})  # fmt: skip


def arena_hard(body: dict) -> JudgeAnswer:
    """No label on the first turn; the label when asked to continue."""
    good, _ = letters(body)
    last = body["messages"][-1]["content"]
    text = f"My final verdict is: [[{good}>>{'A' if good == 'B' else 'B'}]]" if last.startswith("continue") else "Hmm."
    return 200, chat_answer(text, usage=USAGE), "application/json"


def test_judgebench_arena_hard_asks_once_more_for_a_missing_label(tmp_path):
    data = pairs(tmp_path, ["q1"])
    with FakeJudge(arena_hard) as judge:
        result = judge_run(judge.url, data, tmp_path / "run", prompt="judgebench")
    assert result.all_scored and result.summary["accuracy"] == 1.0 and len(judge.requests) == 2
    first, second = judge.requests
    assert first["messages"][0]["content"].startswith("Please act as an impartial judge")
    assert first["messages"][1]["content"].startswith("<|User Prompt|>\nq1\n\n<|The Start of Assistant A's Answer|>")
    assert second["messages"][2:] == [
        {"role": "assistant", "content": "Hmm."},
        {"role": "user", "content": "continue your judgment and finish by outputting a final verdict label"},
    ]
    record = json.loads((result.out_dir / "samples.jsonl").read_text())["details"]["judgements"][0][0]
    assert record["requests"] == 2 and record["prompt_tokens"] == 200


def test_judgebench_prompts_have_no_rating_prompt():
    from rmbench_client.config.schema import JudgeOptions
    from rmbench_client.model_kinds.judge import JudgeModel
    from rmbench_client.model_kinds.judge_prompts import judgebench

    with pytest.raises(ConfigError, match="judgebench has no rating prompt"):
        JudgeModel(None, JudgeOptions(), "rating", {}, judgebench())  # type: ignore[arg-type]


def test_a_patch_release_of_the_server_keeps_the_stored_judgements(tmp_path):
    """0.32.0 -> 0.32.1 asks nothing again; 0.33.0 (a minor release) asks everything again."""
    data = pairs(tmp_path, ["q1", "q2"])
    with FakeJudge(healthy, version="0.32.0") as judge:
        assert judge_run(judge.url, data, tmp_path / "run").sent_sequences == 2
        judge.version = "0.32.1"
        again = judge_run(judge.url, data, tmp_path / "run")
        assert again.sent_sequences == 0 and again.all_scored
        assert again.summary["identity"]["models"]["judge"]["served"]["version"] == "0.32.1"
        judge.version = "0.33.0"
        assert judge_run(judge.url, data, tmp_path / "run").sent_sequences == 2


def test_reading_pure_cases():
    assert split({"content": "<think>a [[A]]</think> [[B]]"}) == ("a [[A]]", " [[B]]", False)
    assert split({"content": "x [[A]]</think>[[B]]"}) == ("x [[A]]", "[[B]]", False)
    assert split({"content": "<think>a [[A]]", "finish": "length"}) == ("a [[A]]", "", True)
    assert split({"content": None, "reasoning": "r", "finish": "length"}) == ("r", "", True)
    assert split({"content": "[[B]]", "reasoning": "r"}) == ("r", "[[B]]", False)
    assert majority(["A", "B", "A"]) == "A" and majority(["A", "B"]) == "C" and majority([]) is None
    assert majority(["A", "A", "B", "B", "C"]) == "C"
    j = judgement(chat_answer("<think>[[A]]", finish="length", usage=USAGE), 1, "x", 0.5)
    reading = read(j, last_verdict, majority)
    assert reading.value is None and reading.cut == "thinking"
    assert cost(j) == {"prompt_tokens": 100, "reasoning_tokens": None, "answer_tokens": None, "seconds": 0.5,
                       "requests": 1}  # fmt: skip
    assert run_cost([None, {"answers": []}]) is None
    # vLLM's count is 0 when the template opened the thinking: uncounted, not all answer
    split_off = judgement(chat_answer(None, reasoning="hm", finish="length", usage=USAGE | {
        "completion_tokens_details": {"reasoning_tokens": 0}}), 1, "x", 0.5)  # fmt: skip
    assert cost(split_off)["reasoning_tokens"] is None and cost(split_off)["answer_tokens"] is None
