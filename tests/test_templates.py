"""Client-side chat templates: rendered as transformers renders them; `auto` falls back to the server's."""

from __future__ import annotations

import json

import pytest
from conftest import SERVER_PYTHON, transformers_render

from rmbench_client.config.schema import RoleConfig
from rmbench_client.errors import ConfigError
from rmbench_client.model_kinds.chat_templates import load_template, resolve_template

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
    # a Jinja file that reads special tokens needs the model's config beside it (else they would render empty)
    (tmp_path / "plain.jinja").write_text("{{ eos_token }}")
    with pytest.raises(
        ConfigError,
        match=r"uses eos_token: put the model.s tokenizer_config.json \(or special_tokens_map.json\) beside it",
    ):
        load_template(str(tmp_path / "plain.jinja"))
    # a template that fails on a conversation names itself and the failure, with no hint about the config
    (tmp_path / "sum.jinja").write_text("{{ messages[0]['content'] + 1 }}")
    with pytest.raises(ConfigError, match=r"sum.jinja: the chat template failed on a conversation: .*str"):
        load_template(str(tmp_path / "sum.jinja")).render(MESSAGES, False)
    (tmp_path / "attr.jinja").write_text("{{ nothing.here }}")
    with pytest.raises(ConfigError, match="attr.jinja: the chat template failed on a conversation: 'nothing' is"):
        load_template(str(tmp_path / "attr.jinja")).render(MESSAGES, False)
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


# Qwen-2.5-like: `tools` (undefined unless given), `message.tool_calls` (absent from plain messages), tojson
QWEN_LIKE = """{%- if tools %}
    {{- '<|im_start|>system\\n# Tools\\n' }}{%- for tool in tools %}{{- tool | tojson }}{%- endfor %}
{%- elif messages[0]['role'] == 'system' %}
    {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
{%- else %}
    {{- '<|im_start|>system\\nYou are helpful & <b>kind</b>.<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if message.role == 'assistant' and message.tool_calls %}
        {{- '<|im_start|>assistant\\n<tool_call>' + (message.tool_calls | tojson) }}
    {%- elif message.role != 'system' %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}
{{- {'a': '<&>', 'b': 'Ä'} | tojson }}"""

# Llama-3.2-like: the date from strftime_now, `{% break %}` and `{% continue %}` (loopcontrols), a namespace
LLAMA_LIKE = """{{- bos_token }}
{%- if strftime_now is defined %}{%- set date_string = strftime_now("%d %b %Y") %}
{%- else %}{%- set date_string = "26 Jul 2024" %}{%- endif %}
{{- '<|start_header_id|>system<|end_header_id|>\\n\\nToday Date: ' + date_string + '<|eot_id|>' }}
{%- set ns = namespace(first='') %}
{%- for message in messages %}
    {%- if message['role'] == 'system' %}{% continue %}{% endif %}
    {%- if not ns.first %}{% set ns.first = message['content'] %}{% endif %}
    {{- '<|start_header_id|>' + message.role + '<|end_header_id|>\\n\\n' + message.content | trim + '<|eot_id|>' }}
    {%- if message['content'] == 'STOP' %}{% break %}{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}
{%- generation %}{{ ns.first | length }}{%- endgeneration %}"""

CONVERSATIONS = [
    MESSAGES,
    [{"role": "system", "content": "Be brief."}, *MESSAGES],
    [*MESSAGES, {"role": "user", "content": "STOP"}, {"role": "assistant", "content": "never rendered"}],
    [{"role": "user", "content": "Call it."}, {"role": "assistant", "content": "", "tool_calls": [{"name": "f"}]}],
]


@pytest.mark.slow
@pytest.mark.parametrize("text", [QWEN_LIKE, LLAMA_LIKE], ids=["qwen-like", "llama-like"])
def test_rendering_equals_transformers(tmp_path, text):
    """Templates that need transformers' environment (default Undefined, loopcontrols, strftime_now, its tojson,
    the generation tag) render here exactly as transformers' own rendering does."""
    from datetime import datetime

    tokens = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": text, **tokens}))
    template = load_template(str(tmp_path / "tokenizer_config.json"))
    mine = [template.render(c, g) for c in CONVERSATIONS for g in (False, True)]
    if text is LLAMA_LIKE:
        assert f"Today Date: {datetime.now():%d %b %Y}" in mine[0] and "never rendered" not in mine[4]
        assert "Be brief." not in mine[2] and mine[0].endswith("3")  # system skipped (continue); generation tag
    else:
        assert '{"a": "<&>", "b": "Ä"}' in mine[0] and '<tool_call>[{"name": "f"}]' in mine[6]
    if not SERVER_PYTHON.exists():
        pytest.skip(".venv-server (transformers) is not set up")
    conversations = [[c, g] for c in CONVERSATIONS for g in (False, True)]
    assert mine == transformers_render({"template": text, "tokens": tokens, "conversations": conversations})


# Mistral's older templates add eos_token with `+`: an undefined one fails rather than rendering empty
MISTRAL_LIKE = (
    "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}{{ '[INST] ' + m['content'] + ' [/INST]' }}"
    "{% else %}{{ m['content'] + eos_token }}{% endif %}{% endfor %}"
)


@pytest.mark.slow
@pytest.mark.parametrize("decoder", [False, True], ids=["older-save", "added-tokens-decoder"])
def test_special_tokens_from_every_file_transformers_reads(tmp_path, decoder):
    """A tokenizer saved the older way keeps its special tokens in special_tokens_map.json only: the client renders
    them (BOS included) exactly as transformers' apply_chat_template; a config with `added_tokens_decoder` makes
    transformers ignore that file, and the client too."""
    import shutil

    from conftest import REPO

    models = REPO / "models" / "tiny" / "reward"
    if not (models / "tokenizer.json").is_file():
        pytest.skip("the tiny models are not built")
    shutil.copy(models / "tokenizer.json", tmp_path)
    (tmp_path / "special_tokens_map.json").write_text(json.dumps({"bos_token": "<s>", "eos_token": "</s>"}))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "chat_template": MISTRAL_LIKE, "eos_token": "<x>"}
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps(config | ({"added_tokens_decoder": {}} if decoder else {}))
    )
    template = load_template(str(tmp_path / "tokenizer_config.json"))
    mine = [template.render(c[:2], g) for c in CONVERSATIONS[:2] for g in (False, True)]
    if decoder:
        assert template.tokens == {"eos_token": "<x>"} and template.unset == {"bos_token"}
    else:  # special_tokens_map.json's values win over the config's
        assert template.tokens == {"bos_token": "<s>", "eos_token": "</s>"} and not template.unset
        assert mine[0] == "<s>[INST] Hi? [/INST]Yo.</s>"
    if not SERVER_PYTHON.exists():
        pytest.skip(".venv-server (transformers) is not set up")
    conversations = [[c[:2], g] for c in CONVERSATIONS[:2] for g in (False, True)]
    assert mine == transformers_render({"tokenizer_dir": str(tmp_path), "conversations": conversations})


def test_named_templates_and_chat_template_file(tmp_path):
    """As transformers loads a tokenizer directory: chat_template.jinja beside the config wins over its
    chat_template; named templates give "default" (a conversation without tools)."""
    config = {"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    assert load_template(str(tmp_path / "tokenizer_config.json")).render(MESSAGES, False) == "D"
    (tmp_path / "chat_template.jinja").write_text("J{{ messages | length }}")
    assert load_template(str(tmp_path / "tokenizer_config.json")).render(MESSAGES, False) == "J2"


def test_auto_from_the_hub_prefers_chat_template_jinja(tmp_path):
    """A hub model whose template is in chat_template.jinja (as transformers now saves it): `auto` renders that one,
    as transformers loading the repository would; a repository without it gives the config's."""
    import os
    import subprocess
    import sys

    from hub_standin import serve_hub

    config = json.dumps({"chat_template": "old", "bos_token": "<s>"}).encode()
    legacy = {"tokenizer_config.json": json.dumps({"chat_template": "legacy {{ bos_token }}"}).encode(),
              "special_tokens_map.json": b'{"bos_token": "<b>"}'}  # fmt: skip
    repos = {"org/new": {"tokenizer_config.json": config, "chat_template.jinja": b"new {{ bos_token }}"},
             "org/old": {"tokenizer_config.json": config}, "org/legacy": legacy}  # fmt: skip
    script = (
        "from rmbench_client.model_kinds.chat_templates import resolve_template\n"
        "from rmbench_client.config.schema import RoleConfig\n"
        "for repo in ('org/new', 'org/old', 'org/legacy'):\n"
        "    role = RoleConfig.from_data({'served_model': 'm', 'endpoints': ['http://127.0.0.1:1'],"
        " 'serve': {'path': repo}})\n"
        "    print(resolve_template('auto', role).render([], False))\n"
    )
    with serve_hub(repos) as hub:
        env = os.environ | {"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "0"}
        proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == ["new <s>", "old", "legacy <b>"]  # legacy: its special_tokens_map.json


@pytest.mark.parametrize(
    "escape",
    [
        "{{ messages.append(messages[0]) }}",
        "{{ ''.__class__.__mro__ }}",
        "{{ (messages | attr('__class__')).__base__ }}",
        "{{ messages[0].update({'role': 'x'}) }}",
    ],  # fmt: skip
)
def test_the_sandbox_is_as_strict_as_transformers(tmp_path, escape):
    """transformers' ImmutableSandboxedEnvironment: a template may neither change the conversation nor reach
    Python's internals (through attributes or the |attr filter, an escape closed in Jinja 3.1.6)."""
    (tmp_path / "t.jinja").write_text(escape + "{{ messages | length }}")
    with pytest.raises(ConfigError, match="t.jinja: the chat template failed on a conversation"):
        load_template(str(tmp_path / "t.jinja")).render(MESSAGES, False)
    assert len(MESSAGES) == 2 and MESSAGES[0]["role"] == "user"


def test_jinja_with_known_sandbox_escapes_is_refused():
    """The floor in pyproject.toml is the one the client checks at run time, and older Jinja is refused in one line."""
    import tomllib

    from conftest import REPO

    from rmbench_client import constants as C
    from rmbench_client.model_kinds.chat_templates import _check_jinja

    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert f"jinja2>={C.JINJA_MIN_VERSION}" in dependencies and C.JINJA_MIN_VERSION == "3.1.6"
    with pytest.raises(ConfigError, match=r"jinja2 3.1.4 is installed: chat templates need jinja2>=3.1.6"):
        _check_jinja("3.1.4")
    _check_jinja("3.1.6")
