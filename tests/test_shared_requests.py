"""A reward model's texts of consecutive prompts share a request (`reward.texts_per_request` at most, a prompt never
split), against a loopback stand-in for vLLM (fake_reward_faults.py): the outputs are those of one request per
prompt, in fewer requests; a bad text inside a shared request fails its own prompt only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from fake_reward_faults import MODEL, FakeVllm
from helpers_cli import stored

from rmbench_client import constants as C
from rmbench_client.config.loading import load_config
from rmbench_client.run import planning, runner

pytestmark = pytest.mark.timeout(60)
PROMPTS = 10  # 20 texts: one shared request of every prompt
TEMPLATE = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}</s>{% endfor %}"


def config(tmp_path: Path, url: str, out: str, per_request: int | None = None) -> Path:
    data = tmp_path / "prefs.jsonl"
    records = [{"id": f"p{i}", "prompt": f"question {i}?", "chosen": f"good {i}", "rejected": f"bad {i}"} for i in
               range(PROMPTS)]  # fmt: skip
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    template = tmp_path / "template.jinja"
    template.write_text(TEMPLATE)
    cfg = {
        "benchmark": "pairwise",
        "model": "fake",
        "data": str(data),
        "out": str(tmp_path / out),
        "roles": {"reward": {"served_model": MODEL, "endpoints": [url]}},
        "reward": {"template": str(template)} | ({"texts_per_request": per_request} if per_request else {}),
    }
    path = tmp_path / f"{out}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def scoring_requests(fake: FakeVllm, before: int = 0) -> int:
    """/pooling requests that scored (identity probes apart: each new connection is checked, and how many
    connections a run opens is the pool's business)."""
    return fake.counts["/pooling"] - fake.probes - before


def run(tmp_path: Path, fake: FakeVllm, out: str, per_request: int | None = None) -> tuple[runner.RunResult, int]:
    """The run and its /pooling requests."""
    before = scoring_requests(fake)
    cfg = load_config(config(tmp_path, fake.url, out, per_request))
    result = runner.run(cfg, fresh=True, progress=False, heatmaps=False)
    return result, scoring_requests(fake, before)


def test_shared_requests_write_what_one_request_per_prompt_writes(tmp_path):
    with FakeVllm(width=1) as fake:
        shared, shared_requests = run(tmp_path, fake, "shared")
        alone, alone_requests = run(tmp_path, fake, "alone", per_request=1)  # a prompt's two texts: alone
    assert C.UNITS_PER_REQUEST >= 2 * PROMPTS and shared.all_scored and alone.all_scored
    assert alone_requests - shared_requests == PROMPTS - 1  # one request instead of one per prompt
    # the values went back to their own prompts: the fake's reward is a function of the text alone
    assert (tmp_path / "shared/samples.jsonl").read_bytes() == (tmp_path / "alone/samples.jsonl").read_bytes()
    assert stored(tmp_path / "shared") == stored(tmp_path / "alone") == 2 * PROMPTS


def test_texts_per_request_sets_how_many_texts_share_a_request(tmp_path):
    with FakeVllm(width=1) as fake:
        result, requests = run(tmp_path, fake, "fives", per_request=5)  # two prompts of two texts fit, not three
        assert fake.sizes == [4] * (PROMPTS // 2) and requests == PROMPTS // 2
        run(tmp_path, fake, "alone", per_request=1)
    assert result.all_scored
    assert (tmp_path / "fives/samples.jsonl").read_bytes() == (tmp_path / "alone/samples.jsonl").read_bytes()


def test_a_bad_text_in_a_shared_request_fails_its_prompt_alone(tmp_path):
    with FakeVllm(width=1, nan_for="good 3") as fake:
        result, requests = run(tmp_path, fake, "run")
        kept = stored(tmp_path / "run")
        fake.nan_for = None
        rerun = runner.run(load_config(config(tmp_path, fake.url, "run")), progress=False, heatmaps=False)
    assert set(result.failures) == {"p3"} and "non-finite" in result.failures["p3"]
    assert requests >= 1 + PROMPTS  # the shared request, then each prompt on its own
    assert kept == 2 * (PROMPTS - 1)  # every other prompt's values were kept
    assert rerun.all_scored and rerun.sent_sequences == 2  # the rerun sends p3's two texts only


def test_a_text_shared_by_prompts_is_counted_and_sent_once(tmp_path):
    """Prompts whose responses are the same texts: `run --dry-run` says it would send each distinct text once, and
    the run sends (one shared request) and stores just those."""
    with FakeVllm() as fake:
        cfg = load_config(config(tmp_path, fake.url, "same"))
        same = [{"id": f"p{i}", "prompt": "question?", "chosen": f"good {i % 2}", "rejected": "bad"} for i in
                range(PROMPTS)]  # fmt: skip
        (tmp_path / "prefs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in same))
        plan = planning.plan(cfg)
        result = runner.run(cfg, fresh=True, progress=False, heatmaps=False)
    assert result.all_scored and (plan["units"], plan["to_send"]) == (2 * PROMPTS, 3), plan
    assert sum(fake.sizes) == stored(tmp_path / "same") == 3
