"""Process reward models without a server: the critic's prompt and answer reading (ProcessBench's), the step
pooler's answer checks, step alignment, the config and the servers `serve` starts for a PRM."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rmbench_client import constants as C
from rmbench_client.backends.vllm_prm import right_probabilities, step_probability
from rmbench_client.config.schema import PrmOptions, RunConfig
from rmbench_client.errors import SampleError, ShapeError
from rmbench_client.examples import Example
from rmbench_client.launcher.commands import server_command
from rmbench_client.model_kinds.prm import StepScores, step_positions
from rmbench_client.model_kinds.prm_critic import (
    CRITIQUE_TEMPLATE,
    CriticPrm,
    boxed_index,
    critique,
    critique_messages,
    step_scores,
)

REPO = Path(__file__).resolve().parents[1]


def test_critique_prompt_is_processbench_s() -> None:
    (message,) = critique_messages("What is 1+1?", ("1+1 = 2.", "So 2."))
    assert message["role"] == "user"
    text = message["content"]
    # run_eval.py's prepare_input_boxed: tagged paragraphs from 0, joined by a blank line, the whole stripped
    tagged = "<paragraph_0>\n1+1 = 2.\n</paragraph_0>\n\n<paragraph_1>\nSo 2.\n</paragraph_1>"
    assert f"[Solution]\n\n{tagged}\n\nYour task" in text
    assert text.startswith("The following is a math problem and a solution (split into paragraphs, enclosed with")
    assert "[Math Problem]\n\nWhat is 1+1?\n\n[Solution]" in text
    assert text.endswith("Please put your final answer (i.e., the index) in \\boxed{}.")  # format() unescapes {{}}
    assert "{problem}" in CRITIQUE_TEMPLATE and "{tagged_response}" in CRITIQUE_TEMPLATE


@pytest.mark.parametrize(
    ("answer", "index"),
    [
        ("The error is in paragraph 2. \\boxed{2}", 2),
        ("\\boxed{1} no, wait: \\boxed{ -1 }", -1),  # the last box, stripped
        ("\\boxed{\\frac{1}{2}}", None),  # [^}]* stops at the first brace: not an integer
        ("paragraph 3", None),
        ("\\boxed{}", None),
        (None, None),
    ],
)
def test_boxed_index(answer: str | None, index: int | None) -> None:
    assert boxed_index(answer) == index


def test_critic_answer_as_step_scores() -> None:
    thought = {"samples": [[{"content": "<think>maybe \\boxed{0}</think>text \\boxed{1}", "finish": "stop"}]]}
    assert critique(thought) == "text \\boxed{1}" and critique(None) is None  # judge.ask's judgement, after thinking
    assert step_scores(-1, 3) == [1.0, 1.0, 1.0]
    assert step_scores(0, 3) == [0.0]
    assert step_scores(2, 3) == [1.0, 1.0, 0.0]
    assert step_scores(3, 3) == [] and step_scores(None, 3) == [] and step_scores(-2, 3) == []


def critique_value(content: str, finish: str, prediction: int | None = None) -> dict[str, Any]:
    """A stored critique as CriticPrm.score stores it: the judgement judge.ask returned, and what was read."""
    answer = {"samples": [[{"content": content, "reasoning": None, "finish": finish}]]}
    return {"steps": [], "prediction": prediction, "answer": answer}


def test_a_critique_cut_off_at_max_tokens_is_counted_and_marked_as_cut() -> None:
    """A critique that ran out of prm.max_tokens before its \\boxed{} answer is counted as cut off (while thinking
    apart), as a judge's answer is, not as one that gave none; its details say so."""
    model = CriticPrm(None, PrmOptions(method="critic", max_tokens=8), {})  # type: ignore[arg-type]  # no request
    solution = Example("s0", "gsm8k", "", "What is 6 * 7?", (), (), steps=("6 * 7 = 42.",), step_labels=(1,))
    values = {
        "answer": critique_value("The first paragraph computes", "length"),
        "thinking": critique_value("<think>Let me check paragraph", "length"),
        "none": critique_value("Every paragraph is fine.", "stop"),
        "outside": critique_value("\\boxed{7}", "stop", prediction=7),
    }
    merged = {name: model.merge([value]) for name, value in values.items()}
    (warning,) = model.warnings
    assert warning.startswith("4 critique(s) gave no paragraph index in \\boxed{} (cut off at prm.max_tokens 8: 2, "
                              "1 of them while thinking; none given or one outside the solution: 2)")  # fmt: skip
    assert model.details(solution, merged["answer"])["cut_off"] == "answer"
    assert model.details(solution, merged["thinking"])["cut_off"] == "thinking"
    assert "cut_off" not in model.details(solution, merged["none"])
    assert "cut_off" not in model.details(solution, merged["outside"])


def test_step_pooler_answers_are_checked() -> None:
    assert right_probabilities([[0.25, 0.75], [0.9, 0.1]], "here") == [0.75, 0.1]
    with pytest.raises(ShapeError, match="not probabilities"):
        right_probabilities([[-1.2, 3.4]], "here")  # logits: a pooler without its softmax
    with pytest.raises(ShapeError, match="not a pair"):
        right_probabilities([[0.2, 0.3, 0.5]], "here")
    with pytest.raises(SampleError, match="non-finite"):
        right_probabilities([[float("nan"), 0.5]], "here")
    assert step_probability(-0.5, -0.5) == 0.5
    assert abs(step_probability(-1.0, -3.0) - 1 / (1 + 2.718281828459045**-2)) < 1e-12


def test_step_positions_never_shift() -> None:
    assert step_positions([1, 5, 2, 3, 5], 5, 2, "prompt x") == [1, 4]
    with pytest.raises(SampleError, match="prompt x: 1 step tags in the tokenized solution for 2 steps"):
        step_positions([1, 5, 2], 5, 2, "prompt x")


def test_merged_value_carries_its_steps() -> None:
    merged = StepScores({"steps": [0.5, 0.25], "cut": 128})
    assert tuple(float(v) for v in merged) == (0.5, 0.25) and merged.value["cut"] == 128


def prm_cfg(**prm: object) -> RunConfig:
    serve = {"engine": "vllm-cpu", "path": "models/tiny/policy"}
    role = {"served_model": "p", "endpoints": ["http://127.0.0.1:8704"], "serve": serve}
    return RunConfig.from_data({"model": "p", "type": "prm", "roles": {"prm": role}, "prm": prm})


def test_prm_config_defaults() -> None:
    cfg = prm_cfg()
    assert cfg.roles_used() == ("prm",) and cfg.prm.method == "pooling"
    assert cfg.prm.tag() == C.PRM_STEP_TAG and cfg.prm.system == C.PRM_SYSTEM
    assert prm_cfg(method="logprobs").prm.tag() == C.PRM_LOGPROB_STEP_TAG
    assert prm_cfg(method="logprobs", step_tag="<pad>").prm.tag() == "<pad>"


def test_serve_starts_a_prm_with_its_step_tag() -> None:
    cfg = prm_cfg(step_tag_id=151651)
    cmd = server_command("prm", cfg.roles["prm"], "http://127.0.0.1:8704", REPO, cfg.prm)
    assert cmd[cmd.index("--pooler-config") + 1] == '{"step_tag_id": 151651}'
    assert "--enable-scale-out" not in cmd
    plain = server_command("prm", cfg.roles["prm"], "http://127.0.0.1:8704", REPO, prm_cfg().prm)
    assert "--pooler-config" not in plain  # vLLM's own default tag id (Qwen's <extra_0>) then applies
    role = cfg.roles["prm"]
    assert role.serve is not None
    own = role.replace(serve=role.serve.replace(extra_args=["--pooler-config", '{"step_tag_id": 7}']))
    cmd = server_command("prm", own, "http://127.0.0.1:8704", REPO, cfg.prm)
    assert cmd.count("--pooler-config") == 1 and cmd[-1] == '{"step_tag_id": 7}'  # the config's own is left as given
    logprobs = prm_cfg(method="logprobs")
    cmd = server_command("prm", logprobs.roles["prm"], "http://127.0.0.1:8704", REPO, logprobs.prm)
    assert "--pooler-config" not in cmd and "--enable-scale-out" in cmd


def test_run_flags_name_the_prm_role() -> None:
    from rmbench_client.cli import build_parser
    from rmbench_client.cli.run import config

    args = build_parser().parse_args(["run", "--type", "prm", "--endpoint", "http://127.0.0.1:8704", "--served-model",
                                      "my-prm", "--prm-method", "logprobs", "--benchmark", "processbench"])  # fmt: skip
    cfg = config(args)
    assert cfg.model == "my-prm" and cfg.prm.method == "logprobs" and cfg.roles_used() == ("prm",)
    assert cfg.roles["prm"].endpoints == ["http://127.0.0.1:8704"] and set(cfg.roles) == {"prm"}
