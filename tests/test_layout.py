"""The package's shape, as docs/architecture.md and CONTRIBUTING.md promise it: a small root, folders that name
their concern and say what they hold, no module too long to read, a plug-in example short enough to copy."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "rmbench_client"
PLUGIN = ROOT / "examples" / "benchmark-plugin" / "rmbench_honesty_pairs.py"


def test_the_root_holds_the_public_face_and_a_few_leaves():
    # _version.py (written at install by setuptools-scm) counts: it is a module in the folder too.
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(root) <= 12, root


def test_every_folder_says_what_it_holds_and_none_is_too_big():
    for init in PACKAGE.rglob("__init__.py"):
        folder = init.parent
        if "__pycache__" in folder.parts:
            continue
        assert ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))), f"{folder} has no docstring"
        assert len(list(folder.glob("*.py"))) <= 20, folder


def test_no_module_is_over_400_lines():
    long = {str(p.relative_to(ROOT)): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > 400}
    assert not long


def code_lines(source: str) -> int:
    """Lines that hold code: not blank, not only a comment, not inside a docstring."""
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docstrings.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    code: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in (
            tokenize.COMMENT,
            tokenize.NL,
            tokenize.NEWLINE,
            tokenize.INDENT,
            tokenize.DEDENT,
            tokenize.ENDMARKER,
        ):
            code.update(range(token.start[0], token.end[0] + 1))
    return len(code - docstrings)


def test_code_lines_count_neither_docstrings_nor_comments():
    source = (
        '"""Doc.\n\nMore."""\n\n# a comment\nx = 1  # why\n\n\n'
        'def f():\n    """One."""\n    return (\n        x\n    )\n'
    )
    assert code_lines(source) == 5  # x = 1; def f(); return ( x )


def test_the_plugin_example_is_at_most_40_lines_of_code():
    assert code_lines(PLUGIN.read_text(encoding="utf-8")) <= 40
