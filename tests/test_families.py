"""Real model families end to end: for each family's tiny reward model and DPO policy (servers/build_families.py:
its special tokens, BOS convention and chat template) served by vLLM CPU, every template mode scores what
transformers computes in-process on `apply_chat_template`'s tokens, BOS arrives once where the family has one
(never where it has none), and the client renders each template exactly as transformers does.

One reward and one policy server per family, started once for all of its tests; two short chat prompts each.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from conftest import (
    REPO,
    SERVER_PYTHON,
    building,
    ensure_server_side,
    port,
    transformers_reference,
    transformers_render,
)
from helpers_data import require_rmbench

from rmbench_client.config.schema import RunConfig
from rmbench_client.errors import ConfigError
from rmbench_client.launcher import start_servers, stop_servers
from rmbench_client.model_kinds.chat_templates import load_template
from rmbench_client.model_kinds.dpo import reduce
from rmbench_client.run.runner import run

pytestmark = pytest.mark.server
FAMILY_MODELS = REPO / "models" / "families"
FAMILIES = ["llama-3.1", "llama-3.2", "qwen2.5", "qwen3", "gemma-2", "gemma-3", "mistral-v0.3"]
BOS = {"llama-3.1": "<|begin_of_text|>", "llama-3.2": "<|begin_of_text|>", "gemma-2": "<bos>", "gemma-3": "<bos>",
       "mistral-v0.3": "<s>"}  # fmt: skip
# vLLM CPU 0.32.0 cannot load Gemma3TextForSequenceClassification ("no module or parameter named 'model'")
NO_REWARD_SERVER = {"gemma-3"}
# conversations the client renders (a user turn and a response) and the system-message handling of each template
CONVERSATIONS = [
    [{"role": "user", "content": " Hi?\n"}, {"role": "assistant", "content": "Yes: ÄÖü <b>42</b>. "}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why?"}],
    [{"role": "user", "content": "A"}, {"role": "assistant", "content": "<think>\nhm\n</think>\n\nB"}],
]


@pytest.fixture(scope="module")
def family_models() -> Path:
    ensure_server_side()
    build = [str(SERVER_PYTHON), str(REPO / "servers" / "build_families.py"), "--out", str(FAMILY_MODELS)]
    with building():
        subprocess.run(build, check=True)
    return FAMILY_MODELS


@pytest.fixture(scope="module")
def two_prompts(tmp_path_factory) -> Path:
    """The 2 shortest chat prompts of RM-Bench (12 sequences)."""
    out = tmp_path_factory.mktemp("family-data")
    records = json.loads((require_rmbench() / "chat_filtered.json").read_text())
    records.sort(key=lambda r: len(r["prompt"]) + sum(len(x) for x in r["chosen"] + r["rejected"]))
    (out / "chat_filtered.json").write_text(json.dumps(records[:2]))
    return out


@dataclass(frozen=True)
class FamilyServers:
    name: str
    models: Path  # models/families/<name>: reward/, policy/
    config: RunConfig
    urls: dict[str, str]


@pytest.fixture(scope="module", params=FAMILIES)
def family(request, family_models, tmp_path_factory) -> Iterator[FamilyServers]:
    """A family's reward and policy servers, started once for every test of that family."""
    name = request.param
    models = family_models / name
    urls = {"reward": f"http://127.0.0.1:{port(40)}", "policy": f"http://127.0.0.1:{port(41)}"}
    if name in NO_REWARD_SERVER:
        del urls["reward"]
    serve = {"engine": "vllm-cpu", "dtype": "float32", "max_model_len": 4096}
    roles = {
        role: {"served_model": f"{name}-{role}", "endpoints": [url], "serve": {**serve, "path": str(models / role)}}
        for role, url in urls.items()
    }
    kind = "dpo" if name in NO_REWARD_SERVER else "reward"
    base = {"benchmark": "rm-bench", "model": name, "type": kind, "dpo": {"reward": "sum"}}
    cfg = RunConfig.from_data({**base, "roles": roles})
    state = tmp_path_factory.mktemp(f"servers-{name}")
    start_servers(cfg, repo_root=REPO, state_dir=state)
    try:
        yield FamilyServers(name, models, cfg, urls)
    finally:
        stop_servers(state)


@pytest.fixture(scope="module")
def reference(family, two_prompts) -> tuple[list[tuple[str, str, int]], dict]:
    """(keys (id, side, style), transformers' rewards and response log-probs) for every sequence."""
    keys, pairs = [], []
    for rec in json.loads((two_prompts / "chat_filtered.json").read_text()):
        for side in ("chosen", "rejected"):
            for style, text in enumerate(rec[side]):
                keys.append((f"chat/{rec['id']}", side, style))
                pairs.append([rec["prompt"], text])
    # DPO `sum` needs no reference model: transformers computes the policy's twice
    return keys, transformers_reference(family.models, pairs, dirs={"reference": "policy"})


# how each template mode reaches the server (the summary's identity): `auto` must not have fallen back
SENT_AS = {"server": "messages", "auto": "text", "file": "text", "ids": "ids"}


def run_family(family: FamilyServers, tmp_path: Path, data: Path, mode: str, **update) -> dict[str, dict]:
    cfg = RunConfig.from_data({**family.config.to_data(), "data": str(data), "out": str(tmp_path / "run"), **update})
    result = run(cfg, progress=False)
    assert result.all_scored and "warnings" not in result.summary, result.summary.get("warnings")
    assert result.summary["identity"]["template"]["mode"] == SENT_AS.get(mode, "text")
    lines = (result.out_dir / "samples.jsonl").read_text().splitlines()
    return {rec["id"]: rec for rec in map(json.loads, lines)}


def assert_equal_scores(got: dict[str, dict], keys: list, expected: list[float]) -> None:
    assert len(keys) == len(expected) == 12
    for (rid, side, style), want in zip(keys, expected, strict=True):
        value = got[rid][f"score_{side}"][style]
        assert abs(value - want) <= 1e-4, (rid, side, style, value, want)


def template_modes(family: FamilyServers) -> list[str]:
    """`server`, `auto`, `ids`; and for the first family the template file. `auto` loads the very file the file
    mode is given here (the model's tokenizer_config.json), so for the other families it would repeat `auto`'s run
    (tests/test_e2e.py runs the file mode with other files)."""
    file = [str(family.models / "policy" / "tokenizer_config.json")] if family.name == FAMILIES[0] else []
    return ["server", "auto", *file, "ids"]


def test_rendering_equals_apply_chat_template(family):
    """The client's rendering of each family's template equals transformers' apply_chat_template, character for
    character, with and without the generation prompt; a template's refusal is a refusal in both."""
    template = load_template(str(family.models / "policy" / "tokenizer_config.json"))
    conversations = [c for c in CONVERSATIONS if not (family.name == "gemma-2" and c[0]["role"] == "system")]
    cases = [[c, g] for c in conversations for g in (False, True)]
    expected = transformers_render({"tokenizer_dir": str(family.models / "policy"), "conversations": cases})
    assert [template.render(c, g) for c, g in cases] == expected
    bos = BOS.get(family.name)
    assert all(text.startswith(bos) and text.count(bos) == 1 for text in expected) if bos else True
    if family.name == "gemma-2":  # its template refuses a system turn, in transformers as here
        with pytest.raises(ConfigError, match="refused the conversation: System role not supported"):
            template.render(CONVERSATIONS[1], False)
        with pytest.raises(RuntimeError, match="System role not supported"):
            transformers_render(
                {"tokenizer_dir": str(family.models / "policy"), "conversations": [[CONVERSATIONS[1], False]]}
            )


def test_bos_arrives_once(family):
    """The tokens the server scores for the client's rendering (sent without added special tokens) and for its
    own template: the family's BOS exactly once, first; none for a family without BOS."""
    template = load_template(str(family.models / "policy" / "tokenizer_config.json"))
    tok_config = json.loads((family.models / "policy" / "tokenizer_config.json").read_text())
    bos = BOS.get(family.name)
    url = family.urls["policy"]
    with httpx.Client(timeout=60) as client:
        vocab = client.post(f"{url}/tokenize", json={"prompt": bos or "", "add_special_tokens": False}).json()
        bos_id = vocab["tokens"][0] if bos else None
        messages = CONVERSATIONS[0]
        mine = client.post(
            f"{url}/tokenize", json={"prompt": template.render(messages, False), "add_special_tokens": False}
        ).json()["tokens"]
        server = client.post(f"{url}/tokenize", json={"messages": messages, "add_generation_prompt": False})
    served = server.json()["tokens"]
    assert mine == served
    if bos:
        assert tok_config["add_bos_token"] is True and mine[0] == bos_id and mine.count(bos_id) == 1
    else:
        assert tok_config["bos_token"] is None and tok_config["add_bos_token"] is False


def test_reward_every_template_mode_equals_transformers(family, two_prompts, reference, tmp_path):
    if family.name in NO_REWARD_SERVER:
        pytest.skip(f"vLLM CPU cannot serve the {family.name} reward model class")
    keys, ref = reference
    for i, mode in enumerate(template_modes(family)):
        got = run_family(family, tmp_path / str(i), two_prompts, mode, reward={"template": mode})
        assert_equal_scores(got, keys, ref["reward"])


def test_dpo_every_template_mode_equals_transformers(family, two_prompts, reference, tmp_path):
    keys, ref = reference
    expected = [reduce("sum", p, None) for p in ref["policy"]]
    assert all(len(p) > 0 for p in ref["policy"])
    roles = {"policy": family.config.roles["policy"].to_data()}
    for i, mode in enumerate(m for m in template_modes(family) if m != "ids"):  # DPO has no `ids` mode
        dpo = {"reward": "sum", "template": mode}
        got = run_family(family, tmp_path / str(i), two_prompts, mode, type="dpo", dpo=dpo, roles=roles)
        assert_equal_scores(got, keys, expected)
