"""Client-side chat templates: rendered as transformers renders them; `auto` falls back to the server's."""

from __future__ import annotations

import json

import pytest

from rmbench_client.chat_templates import load_template, resolve_template
from rmbench_client.config import RoleConfig
from rmbench_client.errors import ConfigError

TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}{{ eos_token }}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
MESSAGES = [{"role": "user", "content": "Hi?"}, {"role": "assistant", "content": "Yo."}]


def role_at(path) -> RoleConfig:
    role = {"served_model": "m", "endpoints": ["http://127.0.0.1:1"], "serve": {"path": str(path)}}
    return RoleConfig.from_data(role)


def test_tokenizer_config_gives_template_and_special_tokens(tmp_path):
    cfg = {"chat_template": TEMPLATE, "bos_token": {"content": "<s>"}, "eos_token": "</s>"}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(cfg))
    template = load_template(str(tmp_path / "tokenizer_config.json"))
    assert template.render(MESSAGES, False) == "<s><|user|>\nHi?</s><|assistant|>\nYo.</s>"
    assert template.render(MESSAGES[:1], True) == "<s><|user|>\nHi?</s><|assistant|>\n"
    assert template.bos_token == "<s>"
    # a Jinja file takes the special tokens from the config beside it
    (tmp_path / "t.jinja").write_text(TEMPLATE)
    jinja = load_template(str(tmp_path / "t.jinja"))
    assert jinja.render(MESSAGES, False) == template.render(MESSAGES, False)
    # the digest (part of every store key) follows the template's text and its special tokens
    assert jinja.digest == template.digest
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(cfg | {"eos_token": "<|end|>"}))
    assert load_template(str(tmp_path / "t.jinja")).digest != jinja.digest
    (tmp_path / "t.jinja").write_text(TEMPLATE + " ")
    assert load_template(str(tmp_path / "t.jinja")).digest != jinja.digest


def test_template_errors_are_config_errors(tmp_path):
    (tmp_path / "bad.jinja").write_text("{% for %}")
    with pytest.raises(ConfigError, match="not a valid Jinja template"):
        load_template(str(tmp_path / "bad.jinja"))
    (tmp_path / "plain.jinja").write_text("{{ eos_token }}")
    with pytest.raises(ConfigError, match="eos_token"):
        load_template(str(tmp_path / "plain.jinja")).render(MESSAGES, False)
    with pytest.raises(ConfigError, match="cannot read"):
        load_template(str(tmp_path / "missing.jinja"))


def test_auto_uses_the_models_config_or_falls_back_to_the_server(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    assert resolve_template("auto", role_at(model)) is None  # no tokenizer_config.json: the server's template
    (model / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<s>"}))
    assert resolve_template("auto", role_at(model)) is None  # no chat template in it
    (model / "tokenizer_config.json").write_text(json.dumps({"chat_template": TEMPLATE, "bos_token": "<s>"}))
    template = resolve_template("auto", role_at(model))
    assert template is not None and template.source.endswith("tokenizer_config.json")
    assert resolve_template("server", role_at(model)) is None


# Llama-3-like: a namespace, a loop variable, a filter, a global function and a refusal
RICH = (
    "{{ bos_token }}{% set ns = namespace(system='') %}"
    "{% for m in messages %}{% if m['role'] == 'system' %}{% set ns.system = m['content'] %}{% endif %}{% endfor %}"
    "{% if ns.system %}[{{ ns.system | trim }}]{% endif %}"
    "{% for m in messages if m['role'] != 'system' %}"
    "{% if m['role'] not in ('user', 'assistant') %}{{ raise_exception('bad role ' + m['role']) }}{% endif %}"
    "<{{ m['role'] }} n={{ loop.index }}{{ '/last' if loop.last }}>{{ m['content'] | trim }}{{ eos_token }}"
    "{% endfor %}{% for i in range(2) if add_generation_prompt %}#{{ i }}{% endfor %}"
)


@pytest.mark.parametrize("generation", [False, True])
def test_rendering_equals_jinjas_own_render(tmp_path, generation):
    """The client renders without merging the template's globals on every call; the text is Jinja's own."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps({"chat_template": RICH, "bos_token": "<s>", "eos_token": "</s>"})
    )
    template = load_template(str(tmp_path / "tokenizer_config.json"))
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = lambda message: None
    own = env.from_string(RICH)
    conversation = [{"role": "system", "content": " Be brief. "}, *MESSAGES, {"role": "user", "content": " Ä? "}]
    expected = own.render(messages=conversation, add_generation_prompt=generation, bos_token="<s>", eos_token="</s>")
    assert template.render(conversation, generation) == expected
    assert expected.startswith("<s>[Be brief.]<user n=1>Hi?</s>") and ("#0#1" in expected) == generation
    with pytest.raises(ConfigError, match="refused the conversation: bad role tool"):
        template.render([*MESSAGES, {"role": "tool", "content": "x"}], generation)
