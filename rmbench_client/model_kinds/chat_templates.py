"""Chat templates rendered on the client, as transformers renders them, so that several sequences can go out in
one request (a server applies its own template to one conversation per request only), and so that backends
without a chat template (TEI, SGLang, TGI) can score conversations at all.

The Jinja environment mirrors transformers 5.19.0's `_cached_compile_jinja_template` and `render_jinja_template`
(transformers/utils/chat_template_utils.py) without importing transformers (the client installs without torch):
transformers' sandbox, `ImmutableSandboxedEnvironment` (unsafe attributes and any change to the conversation
refused; Jinja at least `constants.JINJA_MIN_VERSION`, whose sandbox has no known escape), with `trim_blocks`,
`lstrip_blocks`, the `loopcontrols` extension and a `{% generation %}` tag, Jinja's
default `Undefined`, its own `tojson` (no HTML escaping), the globals `raise_exception` and `strftime_now`, and
the variables `messages`, `tools` and `documents` (None), `add_generation_prompt` and the special tokens.

The special tokens are read as transformers' `PreTrainedTokenizerBase._from_pretrained` reads them (5.19.0, as
since 4.34): tokenizer_config.json, then, for a config saved without `added_tokens_decoder` (older saves),
special_tokens_map.json beside it, whose values win. A tokenizer class's own defaults (LlamaTokenizer's `<s>`) cannot
be known without transformers: the start-up check (model_kinds/startup.py) catches a BOS missing that way.

`template` options: `server` (the server applies the model's template), a Jinja file or a tokenizer_config.json,
or `auto`: the tokenizer_config.json of the role's model (its local `serve.path`, else the hub), used only when
its rendering tokenizes exactly as the server's own template does; otherwise the server's.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2
import jinja2.ext
import jinja2.meta
import jinja2.nodes
from jinja2.runtime import new_context
from jinja2.sandbox import ImmutableSandboxedEnvironment
from packaging.version import Version

from .. import constants as C
from ..backends.base import Messages
from ..config.schema import RoleConfig
from ..errors import ConfigError

log = logging.getLogger(__name__)
# transformers' `special_tokens_map`: the named special tokens a template sees (those the tokenizer has)
SPECIAL_TOKENS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
SPECIAL_TOKENS_MAP = "special_tokens_map.json"  # older saves keep the special tokens here (transformers < 4.34)
PROBE: Messages = [
    {"role": "user", "content": "Template check: ÄÖü 123\n\tcode()"},
    {"role": "assistant", "content": "Answer: yes, <b>42</b>."},
]


def _token(value: object) -> str:
    """A special token as tokenizer_config.json writes it: a string or {"content": ...}."""
    if isinstance(value, dict):
        return str(value.get("content", ""))
    return "" if value is None else str(value)


@dataclass(frozen=True)
class ChatTemplate:
    """A chat template and its special tokens; `render(messages, add_generation_prompt)` as transformers does."""

    source: str  # where it came from (a path)
    text: str  # the Jinja source
    tokens: dict[str, str]  # bos_token, eos_token, ... as the template sees them
    unset: frozenset[str] = frozenset()  # special tokens the template reads that no tokenizer file defines

    @property
    def digest(self) -> str:
        """Changes whenever the rendering could: part of every score-store key of a client-rendered sequence."""
        blob = json.dumps([self.text, self.tokens], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]

    @property
    def bos_token(self) -> str:
        return self.tokens.get("bos_token", "")

    def render(self, messages: Messages, add_generation_prompt: bool) -> str:
        variables = {
            "messages": messages,
            "tools": None,
            "documents": None,
            "add_generation_prompt": add_generation_prompt,
            **self.tokens,
        }
        try:
            return _compiled(self.source, self.text).render(variables)
        except ConfigError:
            raise
        except (jinja2.TemplateError, ArithmeticError, LookupError, TypeError, ValueError) as exc:
            message = exc.message if isinstance(exc, jinja2.TemplateError) else str(exc)
            raise ConfigError(f"{self.source}: the chat template failed on a conversation: {message}") from None


@dataclass(frozen=True)
class _Compiled:
    template: jinja2.Template
    globals: dict[str, Any]  # the template's globals (a ChainMap) as one dict, merged once

    def render(self, variables: dict[str, Any]) -> str:
        """`Template.render(**variables)`: the same context, but the globals are neither merged again on every call
        nor iterated as a ChainMap for the context's `globals_keys` (Jinja's own render: 11.6 µs here; this: 3.5,
        timeit)."""
        t = self.template  # `Template.new_context(..., shared=True)` with the globals as one dict
        ctx = new_context(t.environment, t.name, t.blocks, self.globals | variables, True, self.globals)
        try:
            return t.environment.concat(t.root_render_func(ctx))
        except Exception:
            t.environment.handle_exception()


class _Generation(jinja2.ext.Extension):
    """transformers' `{% generation %}...{% endgeneration %}` tag (it marks assistant tokens for training masks);
    outside that tracking, as here, it renders its body unchanged."""

    tags = {"generation"}

    def parse(self, parser: Any) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller: Any) -> str:
        return str(caller())


def _tojson(
    x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None, sort_keys: bool = False
) -> str:
    """transformers' `tojson`: json.dumps with its options (Jinja's own escapes <, >, & and ')."""
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(format: str) -> str:
    return datetime.now().strftime(format)


def _check_jinja(installed: str) -> None:
    """Refuse a Jinja whose sandbox has known escapes (transformers refuses < 3.1.0 the same way)."""
    if Version(installed) < Version(C.JINJA_MIN_VERSION):
        raise ConfigError(
            f"jinja2 {installed} is installed: chat templates need jinja2>={C.JINJA_MIN_VERSION} (older sandboxes can "
            "be escaped); pip install -U jinja2"
        )


def _environment(source: str) -> ImmutableSandboxedEnvironment:
    """The Jinja environment transformers renders chat templates in (see the module docstring)."""
    _check_jinja(importlib.metadata.version("jinja2"))

    def raise_exception(message: str) -> None:
        raise ConfigError(f"{source}: the chat template refused the conversation: {message}")

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[_Generation, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


_CACHE: dict[tuple[str, str], _Compiled] = {}


def _compiled(source: str, text: str) -> _Compiled:
    """The compiled template (compiled once per run: rendering is on the hot path)."""
    key = (source, text)
    if key not in _CACHE:
        env = _environment(source)
        try:
            template = env.from_string(text)
        except jinja2.TemplateSyntaxError as exc:
            raise ConfigError(f"{source}: line {exc.lineno}: not a valid Jinja template ({exc.message})") from None
        _CACHE[key] = _Compiled(template, dict(template.globals))
    return _CACHE[key]


def _used_special_tokens(text: str) -> set[str]:
    """The special-token variables a template reads (bos_token, eos_token, ...)."""
    try:
        names = jinja2.meta.find_undeclared_variables(_environment("").parse(text))
    except jinja2.TemplateSyntaxError:
        return set()  # reported by _compiled
    return names & set(SPECIAL_TOKENS)


def _template_of_config(path: str, tok_config: dict[str, Any], beside: Path) -> str:
    """The template a tokenizer directory gives transformers: chat_template.jinja beside the config, else the
    config's `chat_template` (a string, or named templates of which "default" serves a conversation without tools)."""
    if beside.is_file():
        return beside.read_text(encoding="utf-8")
    chat_template = tok_config.get("chat_template")
    if isinstance(chat_template, list):
        named = {t.get("name"): t.get("template") for t in chat_template if isinstance(t, dict)}
        chat_template = named.get("default")
    if not isinstance(chat_template, str):
        raise ConfigError(f"{path}: no chat_template (a string) in this tokenizer config")
    return chat_template


def special_tokens(tok_config: dict[str, Any] | None, directory: Path) -> dict[str, str] | None:
    """The named special tokens transformers gives a template (its `special_tokens_map`), from the files it reads
    them from (see the module docstring); None when neither file is there."""
    legacy = directory / SPECIAL_TOKENS_MAP
    merged = dict(tok_config or {})
    if "added_tokens_decoder" not in merged and legacy.is_file():
        found = json.loads(legacy.read_text(encoding="utf-8"))
        if not isinstance(found, dict):
            raise ValueError(f"{legacy}: not a JSON object")
        merged |= found
    elif tok_config is None:
        return None
    return {k: _token(merged[k]) for k in SPECIAL_TOKENS if merged.get(k) is not None}


def load_template(path: str) -> ChatTemplate:
    """A chat template from a Jinja file or a tokenizer_config.json (its `chat_template` and special tokens).

    A Jinja file takes its special tokens from the tokenizer files beside it, when there are some.
    """
    file = Path(path)
    try:
        source = file.read_text(encoding="utf-8")
        config_file = file if file.suffix == ".json" else file.with_name("tokenizer_config.json")
        tok_config = json.loads(config_file.read_text(encoding="utf-8")) if config_file.is_file() else None
        if file.suffix == ".json":
            source = _template_of_config(path, tok_config or {}, file.with_name("chat_template.jinja"))
        tokens = special_tokens(tok_config, file.parent)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read the chat template ({exc})") from None
    used = _used_special_tokens(source)
    if tokens is None and used:
        names = ", ".join(sorted(used))
        raise ConfigError(
            f"{path}: the template uses {names}: put the model's tokenizer_config.json (or special_tokens_map.json) "
            "beside it"
        )
    template = ChatTemplate(str(path), source, tokens or {}, frozenset(used - set(tokens or {})))
    _compiled(template.source, template.text)  # a syntax error is reported now, not at the first prompt
    return template


def _model_tokenizer_config(role: RoleConfig) -> Path | None:
    """The tokenizer_config.json of the role's model: its local directory, else the hub (cached)."""
    path = role.serve.path if role.serve else None
    if not path:
        return None
    local = Path(path) / "tokenizer_config.json"
    if local.is_file():
        return local
    if Path(path).exists():
        return None
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import EntryNotFoundError

        config = Path(hf_hub_download(path, "tokenizer_config.json"))
        # newer repos keep the template in chat_template.jinja, which transformers prefers; older ones their special
        # tokens in special_tokens_map.json: both fetched beside, as transformers reads them
        for optional in ("chat_template.jinja", SPECIAL_TOKENS_MAP):
            try:
                hf_hub_download(path, optional)
            except EntryNotFoundError:
                pass
        return config
    except Exception as exc:  # offline, gated, no such repo: the server's template serves instead
        log.info("no client-side chat template for %s (%s); the server applies it", path, exc)
        return None


def resolve_template(option: str, role: RoleConfig) -> ChatTemplate | None:
    """The client-side template of a `template` option, or None for the server's own."""
    if option in ("server", "ids"):
        return None
    if option == "auto":
        found = _model_tokenizer_config(role)
        try:
            return load_template(str(found)) if found else None
        except ConfigError as exc:  # e.g. an older model whose config holds no chat template
            log.info("%s; the server applies its chat template", exc)
            return None
    return load_template(option)


def strip_bos(text: str, bos: str) -> str:
    """`text` without a leading literal `bos` (for servers that add BOS themselves)."""
    return text[len(bos) :] if bos and text.startswith(bos) else text
