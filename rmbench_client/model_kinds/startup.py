"""Start-up checks the model kinds share: does a client-side template tokenize as the server's own does, and
does a sequence arrive with its BOS once (not twice, and not missing where the server's template writes one)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ..backends.vllm import VllmTokenizer
from ..errors import ConfigError, EndpointError
from ..pool.endpoint_pool import EndpointPool
from .chat_templates import PROBE, ChatTemplate

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Difference:
    """How a client-side rendering differs from the server's template: said in `message`."""

    message: str
    bos_missing: bool = False  # the server's template writes a first token (BOS) the client's rendering lacks


async def template_difference(pool: EndpointPool, template: ChatTemplate) -> Difference | None:
    """None when the client's rendering tokenizes exactly as the server's chat template does (vLLM); else what
    differs: a missing BOS is named as such, with the tokenizer files that would define it."""
    tokenizer = VllmTokenizer()
    try:
        text = template.render(PROBE, False)
        mine = await pool.call(lambda ep: tokenizer.tokenize_text(ep, text, add_special_tokens=False))
        server = await pool.call(lambda ep: tokenizer.tokenize(ep, PROBE, add_generation_prompt=False))
    except (EndpointError, ConfigError) as exc:
        return Difference(f"cannot compare the chat template {template.source} with the {pool.role} server's: {exc}")
    if mine == server:
        return None
    if server[1:] == mine:
        why = (
            "bos_token is defined in neither tokenizer_config.json nor special_tokens_map.json beside it"
            if "bos_token" in template.unset
            else "the template writes no BOS"
        )
        return Difference(
            f"BOS missing: {template.source} renders without the first token ({server[0]}) the {pool.role} server's "
            f"chat template writes: {why}",
            bos_missing=True,
        )
    return Difference(f"{template.source} renders differently from the {pool.role} server's chat template")


async def template_agrees(pool: EndpointPool, template: ChatTemplate) -> bool:
    """Whether the client's rendering tokenizes exactly as the server's chat template does (vLLM)."""
    difference = await template_difference(pool, template)
    if difference is not None:
        log.info("%s", difference.message)
    return difference is None


def doubled_first_token(ids: list[int]) -> bool:
    """A sequence that starts with the same token twice: BOS written by the template and added by the server."""
    return len(ids) > 1 and ids[0] == ids[1]
