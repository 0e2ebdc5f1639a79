"""TGI, TEI and SGLang backends against recorded responses (tests/recorded/*.json) served by httpx.MockTransport.

None of these servers can run here; the fixtures follow the shapes their routers and docs define.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers_http import endpoint

from rmbench_client.backends.base import Endpoint
from rmbench_client.backends.sglang import SglangReward
from rmbench_client.backends.tei import TeiReward
from rmbench_client.backends.tgi import TgiLogprobs, added_bos_text
from rmbench_client.config.schema import RewardOptions, RoleConfig
from rmbench_client.errors import EndpointError, RetryableError, SampleError, ShapeError
from rmbench_client.model_kinds.chat_templates import ChatTemplate
from rmbench_client.model_kinds.reward import RewardModel
from rmbench_client.pool.endpoint_pool import EndpointPool

RECORDED = Path(__file__).parent / "recorded"
TGI = json.loads((RECORDED / "tgi.json").read_text(encoding="utf-8"))
TEI = json.loads((RECORDED / "tei.json").read_text(encoding="utf-8"))
SGL = json.loads((RECORDED / "sglang.json").read_text(encoding="utf-8"))
BOS = "<|begin_of_text|>"
CONV = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]

Reply = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]


class Server:
    """Answers each path from its queue of recorded replies, and keeps every request body."""

    def __init__(self, routes: dict[str, list[Reply]]) -> None:
        self.routes = {path: list(replies) for path, replies in routes.items()}
        self.requests: list[tuple[str, Any]] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        payload = json.loads(request.content) if request.content else None
        self.requests.append((request.url.path, payload))
        queue = self.routes.get(request.url.path)
        if not queue:
            return httpx.Response(404, json={"error": f"no recorded reply for {request.url.path}"})
        reply = queue.pop(0)
        rec = reply(payload) if callable(reply) else reply
        return httpx.Response(rec["status"], json=rec["body"], headers=rec.get("headers", {}))

    def bodies(self, path: str) -> list[Any]:
        return [p for got, p in self.requests if got == path]


def call(server: Server, fn: Callable[[Endpoint], Any]) -> Any:
    async def main() -> Any:
        async with httpx.AsyncClient(transport=httpx.MockTransport(server.handler)) as client:
            return await fn(endpoint("http://tgi.test", "the-model", client))

    return asyncio.run(main())


def checked_reward_model(server: Server, backend: str, template: ChatTemplate) -> RewardModel:
    """A reward model on `backend` over the recorded server, after its start-up checks."""

    async def main() -> RewardModel:
        async with httpx.AsyncClient(transport=httpx.MockTransport(server.handler)) as client:
            pool = EndpointPool(backend, [endpoint("http://rm.test", "rm", client)], max_retries=0)
            role = RoleConfig(served_model="rm", endpoints=["http://rm.test"], backend=backend)  # type: ignore[arg-type]
            impl = {"tei": TeiReward, "sglang": SglangReward}[backend]()
            model = RewardModel(pool, role, RewardOptions(template=template.source), impl, template, {"id": "rm"})
            await model.check()
            await pool.aclose()
            return model

    return asyncio.run(main())


def render(messages: list[dict[str, str]], add_generation_prompt: bool) -> str:
    """Llama-3's template, BOS written literally, as a client-side template renders it."""
    text = BOS + "".join(
        f"<|start_header_id|>{m['role']}<|end_header_id|>\n\n{m['content']}<|eot_id|>" for m in messages
    )
    return text + ("<|start_header_id|>assistant<|end_header_id|>\n\n" if add_generation_prompt else "")


def ids_of(tokens: list[dict[str, Any]]) -> list[int]:
    return [t["id"] for t in tokens]


EXPECTED_IDS = ids_of(TGI["tokenize_stripped"]["body"])


# --- TGI ----------------------------------------------------------------------------------------------------------


def test_tgi_finds_the_templated_bos_it_would_add_again():
    tokens = call(Server({"/tokenize": [TGI["tokenize_with_literal_bos"]]}), lambda ep: TgiLogprobs().tokenize(ep, "x"))
    assert added_bos_text(tokens, TGI["full_text"]) == BOS
    stripped = call(Server({"/tokenize": [TGI["tokenize_stripped"]]}), lambda ep: TgiLogprobs().tokenize(ep, "x"))
    assert added_bos_text(stripped, TGI["full_text"][len(BOS) :]) == ""  # one BOS, added by the server
    assert [t.id for t in stripped][:2] == [128000, 128006]


def test_tgi_logprobs_of_a_text_in_one_request_and_the_same_ids_on_the_reference():
    server = Server({"/generate": [TGI["generate"], TGI["generate"]]})
    backend = TgiLogprobs()
    text = TGI["full_text"][len(BOS) :]

    async def run(ep: Endpoint) -> tuple[list[list[int]], list[list[float]], list[list[float]]]:
        ids, policy = await backend.logprobs_of_texts(ep, [text])
        return ids, policy, await backend.logprobs_of_ids(ep, ids, [text])

    ids, policy, reference = call(server, run)
    assert ids == [EXPECTED_IDS] and policy == reference == [TGI["expected_logprobs"]]
    assert len(policy[0]) == len(ids[0]) - 1
    assert server.bodies("/generate")[0] == {
        "inputs": text,
        "parameters": {"max_new_tokens": 1, "details": True, "decoder_input_details": True},
    }


def test_tgi_prefill_ids_differing_from_the_expected_ones_fail_the_sample():
    server = Server({"/generate": [TGI["generate"]]})
    wrong = list(EXPECTED_IDS)
    wrong[5] = 99
    with pytest.raises(SampleError, match="token 5 is 13347, expected 99"):
        call(server, lambda ep: TgiLogprobs().prompt_logprobs_text(ep, "text", wrong))
    server = Server({"/generate": [TGI["generate"]]})
    with pytest.raises(SampleError, match="lengths differ"):
        call(server, lambda ep: TgiLogprobs().prompt_logprobs_text(ep, "text", EXPECTED_IDS[:-1]))


def test_tgi_null_logprob_after_the_first_token_fails_the_sample():
    rec = json.loads(json.dumps(TGI["generate"]))
    rec["body"]["details"]["prefill"][3]["logprob"] = None  # how TGI serialises NaN
    with pytest.raises(SampleError, match="prompt token 3"):
        call(Server({"/generate": [rec]}), lambda ep: TgiLogprobs().prompt_logprobs_text(ep, "text"))


def test_tgi_answer_without_prefill_details_is_a_shape_error_naming_the_field():
    rec = {"status": 200, "body": {"generated_text": "x"}}
    with pytest.raises(ShapeError, match="/generate: unexpected answer: field details"):
        call(Server({"/generate": [rec]}), lambda ep: TgiLogprobs().prompt_logprobs_text(ep, "text"))


@pytest.mark.parametrize(
    ("name", "error", "retry_after"),
    [
        ("overloaded_429_retry_after", RetryableError, 2.0),
        ("overloaded_429", RetryableError, None),
        ("overloaded_503", RetryableError, None),
        ("validation_422", SampleError, None),
    ],
)
def test_tgi_errors_map_onto_the_error_tree(name, error, retry_after):
    with pytest.raises(error) as info:
        call(Server({"/generate": [TGI[name]]}), lambda ep: TgiLogprobs().prompt_logprobs_text(ep, "text"))
    assert type(info.value) is error
    assert TGI[name]["body"]["error"][:30] in str(info.value)
    if error is RetryableError:
        assert info.value.retry_after == retry_after
        assert info.value.overloaded == (TGI[name]["status"] == 429)  # load, not ill health


# --- TEI ----------------------------------------------------------------------------------------------------------


def plain(messages: list[dict[str, str]]) -> str:
    return "\n".join(f"{m['role']}: {m['content']}" for m in messages)


def test_tei_batch_shape_and_request():
    server = Server({"/predict": [TEI["predict_batch"]]})
    scores = call(server, lambda ep: TeiReward().rewards_for_texts(ep, [plain(CONV), plain(CONV[:1])]))
    assert scores == [[1.25], [-0.5]]
    (body,) = server.bodies("/predict")
    assert body == {"inputs": [[plain(CONV)], [plain(CONV[:1])]], "raw_scores": True, "truncate": False}


def test_tei_single_shape_is_put_back_in_label_order():
    server = Server({"/predict": [TEI["predict_single_two_labels"]]})
    assert call(server, lambda ep: TeiReward().rewards_for_texts(ep, ["t"])) == [[-0.25, 0.75]]


def test_tei_flat_shape_one_entry_per_input():
    server = Server({"/predict": [TEI["predict_flat_per_input"]]})
    assert call(server, lambda ep: TeiReward().rewards_for_texts(ep, ["t", "u"])) == [[2.0], [3.5]]


def test_tei_named_labels_need_an_order():
    server = Server({"/predict": [TEI["predict_named_labels"]]})
    with pytest.raises(EndpointError, match="named labels .* set id2label to LABEL_0, LABEL_1, ... in the model's"):
        call(server, lambda ep: TeiReward().rewards_for_texts(ep, ["t"]))
    server = Server({"/predict": [TEI["predict_named_labels"]]})
    ordered = TeiReward(labels=["negative", "positive"])
    assert call(server, lambda ep: ordered.rewards_for_texts(ep, ["t"])) == [[0.1, 0.9]]


@pytest.mark.parametrize("name", ["too_long_413", "too_long_422"])
def test_tei_too_long_input_says_truncation_was_refused(name):
    with pytest.raises(SampleError, match="truncation refused") as info:
        call(Server({"/predict": [TEI[name]]}), lambda ep: TeiReward().rewards_for_texts(ep, ["t"]))
    assert "less than 512 tokens" in str(info.value)


@pytest.mark.parametrize(("name", "retry_after"), [("overloaded_503", None), ("overloaded_429", 1.0)])
def test_tei_overload_is_retryable(name, retry_after):
    with pytest.raises(RetryableError) as info:
        call(Server({"/predict": [TEI[name]]}), lambda ep: TeiReward().rewards_for_texts(ep, ["t"]))
    assert info.value.retry_after == retry_after


def test_tei_wrong_count_is_a_shape_error():
    with pytest.raises(ShapeError, match="2 predictions for 3 inputs"):
        call(Server({"/predict": [TEI["predict_batch"]]}), lambda ep: TeiReward().rewards_for_texts(ep, ["t"] * 3))


LITERAL_BOS = ChatTemplate(
    "bos.jinja",
    "{{ bos_token }}{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}",
    {"bos_token": "<s>"},
)


def test_tei_bos_check_strips_the_templates_bos_and_verifies_one_arrives():
    server = Server(
        {
            "/tokenize": [TEI["tokenize_doubled_bos"], TEI["tokenize_one_bos"]],
            "/predict": [TEI["predict_batch"]],  # the fingerprint probes
        }
    )
    model = checked_reward_model(server, "tei", LITERAL_BOS)
    assert model.strip == "<s>" and model.warnings == []
    first, second = (b["inputs"] for b in server.bodies("/tokenize"))
    assert first.startswith("<s>user") and second == first[len("<s>") :]
    assert all(not inp[0].startswith("<s>") for inp in server.bodies("/predict")[0]["inputs"])
    assert model.identity["models"]["reward"]["fingerprint"] == [1.25, -0.5]


# --- SGLang -------------------------------------------------------------------------------------------------------


def test_sglang_classify():
    server = Server({"/classify": [SGL["classify"]]})
    texts = [plain(CONV), plain(CONV[:1])]
    assert call(server, lambda ep: SglangReward().rewards_for_texts(ep, texts)) == [[2.5], [-1.0]]
    assert server.bodies("/classify") == [{"model": "the-model", "text": texts}]


def test_sglang_wrong_count_is_a_shape_error():
    with pytest.raises(ShapeError, match="expected 1 results"):
        call(Server({"/classify": [SGL["classify"]]}), lambda ep: SglangReward().rewards_for_texts(ep, ["t"]))


def test_sglang_bos_check_strips_the_templates_bos_and_verifies_one_arrives():
    server = Server(
        {"/tokenize": [SGL["tokenize_doubled_bos"], SGL["tokenize_one_bos"]], "/classify": [SGL["classify"]]}
    )
    model = checked_reward_model(server, "sglang", LITERAL_BOS)
    assert model.strip == "<s>" and model.warnings == []
    assert [b["add_special_tokens"] for b in server.bodies("/tokenize")] == [True, True]
    assert all(not t.startswith("<s>") for t in server.bodies("/classify")[0]["text"])


def test_sglang_bos_that_cannot_be_verified_is_said_in_the_warnings():
    server = Server({"/tokenize": [SGL["tokenize_missing"]], "/classify": [SGL["classify"]]})
    model = checked_reward_model(server, "sglang", LITERAL_BOS)
    assert model.strip == "<s>"  # SGLang adds BOS itself: the literal one is removed anyway
    (warning,) = model.warnings
    assert warning.startswith("BOS not verified: sglang could not tokenize the probe") and "removed" in warning


def test_sglang_template_without_literal_bos_is_sent_as_rendered():
    plain_template = ChatTemplate("plain.jinja", LITERAL_BOS.text.replace("{{ bos_token }}", ""), {"bos_token": "<s>"})
    server = Server({"/tokenize": [SGL["tokenize_one_bos"]], "/classify": [SGL["classify"]]})
    model = checked_reward_model(server, "sglang", plain_template)
    assert model.strip == "" and model.warnings == []


# --- the model families' own templates (servers/templates/) on TEI, SGLang and TGI --------------------------------


def family_table() -> dict[str, Any]:
    """servers/build_families.py's FAMILIES: each family's template and special tokens."""
    import importlib
    import sys

    servers = str(Path(__file__).resolve().parents[1] / "servers")
    sys.path.insert(0, servers)
    try:
        module = importlib.import_module("build_families")
    finally:
        sys.path.remove(servers)
    return dict(module.FAMILIES)


FAMILIES = family_table()


def family_template(name: str) -> ChatTemplate:
    family = FAMILIES[name]
    path = Path(__file__).resolve().parents[1] / "servers" / "templates" / f"{family.template}.jinja"
    tokens = {"bos_token": family.bos, "eos_token": family.eos, "pad_token": family.pad, "unk_token": family.unk}
    return ChatTemplate(str(path), path.read_text(encoding="utf-8"), {k: v for k, v in tokens.items() if v})


class FamilyTokenizer:
    """A stand-in for the family's tokenizer as TEI, SGLang and TGI run it (special tokens added): its special
    tokens are one id each, any other character one id; BOS first where the family adds one."""

    def __init__(self, name: str) -> None:
        self.family = FAMILIES[name]
        self.special = {tok: i for i, tok in enumerate(self.family.special)}

    def tokens(self, text: str) -> list[tuple[int, str, int | None]]:
        """(id, text, start offset; None for an added token)."""
        out: list[tuple[int, str, int | None]] = []
        if self.family.bos is not None:
            out.append((self.special[self.family.bos], self.family.bos, None))
        i = 0
        while i < len(text):
            tok = next((t for t in self.special if text.startswith(t, i)), None)
            piece = tok or text[i]
            out.append((self.special[tok] if tok else 1000 + ord(piece), piece, i))
            i += len(piece)
        return out

    def tei(self, payload: dict[str, Any]) -> dict[str, Any]:
        toks = self.tokens(payload["inputs"])
        body = [{"id": i, "text": t, "special": s is None, "start": s, "stop": s} for i, t, s in toks]
        return {"status": 200, "body": [body]}

    def sglang(self, payload: dict[str, Any]) -> dict[str, Any]:
        ids = [i for i, _, _ in self.tokens(payload["prompt"])]
        return {"status": 200, "body": {"tokens": ids, "count": len(ids), "max_model_len": 4096}}

    def tgi(self, text: str) -> list[Any]:
        from rmbench_client.backends.tgi import TgiToken

        # TGI gives an added token start == stop; a literal one its span in the text
        return [TgiToken(id=i, text=t, start=s or 0, stop=(s or 0) + (0 if s is None else len(t))) for i, t, s in
                self.tokens(text)]  # fmt: skip


@pytest.mark.parametrize("backend", ["tei", "sglang"])
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_family_templates_reach_tei_and_sglang_with_one_bos(name, backend):
    """Each family's own template on a server that adds special tokens itself: a family's BOS written by the
    template is removed after the start-up check, so it arrives once; a family without BOS gets none."""
    tokenizer = FamilyTokenizer(name)
    template = family_template(name)
    tokenize = tokenizer.tei if backend == "tei" else tokenizer.sglang
    scoring = {"/predict": [TEI["predict_batch"]]} if backend == "tei" else {"/classify": [SGL["classify"]]}
    server = Server({"/tokenize": [tokenize, tokenize], **scoring})
    model = checked_reward_model(server, backend, template)
    bos = FAMILIES[name].bos
    assert model.warnings == [] and model.strip == (bos or "")
    (sent,) = model._payloads([CONV])
    assert sent == template.render(CONV, False).removeprefix(bos or "")
    ids = [i for i, _, _ in tokenizer.tokens(sent)]
    if bos is None:
        assert sent.startswith("<|im_start|>")  # ChatML: nothing before the first turn
    else:
        assert ids.count(tokenizer.special[bos]) == 1 and ids[0] == tokenizer.special[bos]


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_family_templates_on_tgi_strip_the_bos_tgi_adds(name):
    tokenizer = FamilyTokenizer(name)
    text = family_template(name).render(CONV, False)
    bos = FAMILIES[name].bos
    assert added_bos_text(tokenizer.tgi(text), text) == (bos or "")
    stripped = text.removeprefix(bos or "")
    assert added_bos_text(tokenizer.tgi(stripped), stripped) == ""
