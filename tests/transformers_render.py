"""Chat templates rendered by transformers itself (run with .venv-server's python): the texts the client's own
rendering must equal character for character.

Reads JSON on stdin: {"tokenizer_dir": DIR} (its `apply_chat_template`) or {"template": TEXT, "tokens": {...}}
(transformers' `render_jinja_template`, as `apply_chat_template` calls it), and
"conversations": [[messages, add_generation_prompt], ...]; writes the rendered texts as a JSON list.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from transformers import AutoTokenizer  # noqa: E402
from transformers.utils.chat_template_utils import render_jinja_template  # noqa: E402


def main() -> None:
    req = json.load(sys.stdin)
    out = []
    if "tokenizer_dir" in req:
        tok = AutoTokenizer.from_pretrained(req["tokenizer_dir"])
        for messages, generation in req["conversations"]:
            out.append(tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation))
    else:
        for messages, generation in req["conversations"]:
            (text,), _ = render_jinja_template(
                [messages], chat_template=req["template"], add_generation_prompt=generation, **req["tokens"]
            )
            out.append(text)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
