"""PPE test files in the hub datasets' exact schemas (the dataset cards' `dataset_info` of
`lmarena-ai/PPE-Human-Preference-V1`, split `test`, and `lmarena-ai/PPE-<set>-Best-of-K`, split `train`), written
as the hub's parquet shards (`data/<split>-00000-of-00001.parquet`), laid out as `data fetch` lays them out: nothing
is downloaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

K = 32  # answers per best-of-K row

_I, _S, _B, _F = pa.int64(), pa.string(), pa.bool_(), pa.float64()
PREFERENCE_SCHEMA = pa.schema([
    ("question_id", _S), ("model_a", _S), ("model_b", _S), ("winner", _S), ("prompt", _S), ("response_1", _S),
    ("response_2", _S), ("language", _S),
    ("conv_metadata", pa.struct([(k, _I) for k in ("context_a_tokens", "context_b_tokens", "sum_assistant_a_tokens",
                                                   "sum_assistant_b_tokens", "sum_user_tokens", "turns")])),
    ("is_code", _B), ("is_refusal", _B),
    ("category_tag", pa.struct([
        ("criteria_v0.1", pa.struct([(k, _B) for k in ("complexity", "creativity", "domain_knowledge",
                                                       "problem_solving", "real_world", "specificity",
                                                       "technical_accuracy")])),
        ("if_v0.1", pa.struct([("if", _B), ("score", _I)])),
        ("math_v0.1", pa.struct([("math", _B)])),
    ])),
    ("sim", _F), ("length_a", _I), ("length_b", _I), ("token_diff", _F), ("longer_won", _S), ("hard_prompt", _B),
    ("easy_prompt", _B), ("if_prompt", _B), ("math_prompt", _B),
])  # fmt: skip

_PAIRS = pa.list_(pa.list_(_I))
_ANSWERS = [(f"response_{i}", _S) for i in range(1, K + 1)]
_COMMON_TAIL = [("model_name", _S), ("prompt", _S), *_ANSWERS, ("scores", pa.list_(_B)), ("mean_score", _F)]
_KWARGS = pa.struct(
    [
        ("capital_frequency", _I),
        ("capital_relation", _S),
        ("end_phrase", _S),
        ("first_word", _S),
        ("forbidden_words", pa.list_(_S)),
        ("frequency", _I),
        ("keyword", _S),
        ("keywords", pa.list_(_S)),
        ("language", _S),
        ("let_frequency", _I),
        ("let_relation", _S),
        ("letter", _S),
        ("nth_paragraph", _I),
        ("num_bullets", _I),
        ("num_highlights", _I),
        ("num_paragraphs", _I),
        ("num_placeholders", _I),
        ("num_sections", _I),
        ("num_sentences", _I),
        ("num_words", _I),
        ("postscript_marker", _S),
        ("prompt_to_repeat", _S),
        ("relation", _S),
        ("section_spliter", _S),
    ]
)
_SCORE_DATA = pa.struct([("inst_level_loose_acc", pa.list_(_B)), ("inst_level_strict_acc", pa.list_(_B)),
                         ("prompt_level_loose_acc", _B), ("prompt_level_strict_acc", _B)])  # fmt: skip
CORRECTNESS_SCHEMAS = {  # set -> (hub repo's own fields before the common ones, after them)
    "mmlu_pro": ([("question_id", _S), ("question", _S), ("options", pa.list_(_S)), ("answer", _S),
                  ("answer_index", _I), ("category", _S)], [("parsed_outputs", pa.list_(_S))]),
    "math": ([("question_id", _S), ("problem", _S), ("level", _S), ("type", _S), ("solution", _S),
              ("sanitized_solution", _S)], [("parsed_outputs", pa.list_(_S))]),
    "gpqa": ([("question_id", _S), ("Question", _S), ("Subdomain", _S), ("Record ID", _S),
              ("High-level domain", _S), ("choices", pa.list_(_S)), ("correct_choice_index", _I),
              ("correct_choice", _S), ("canary_string", _S)], [("parsed_outputs", pa.list_(_S))]),
    "ifeval": ([("question_id", _S), ("ifeval_prompt", _S), ("key", _I), ("instruction_id_list", pa.list_(_S)),
                ("kwargs", pa.list_(_KWARGS))], [("score_data", pa.list_(_SCORE_DATA))]),
    "mbpp_plus": ([("question_id", _S), ("task_id", _I), ("code", _S), ("source_file", _S),
                   ("test_imports", pa.list_(_S)), ("test_list", pa.list_(_S)), ("test", _S)], []),
}  # fmt: skip


def correctness_schema(name: str) -> pa.Schema:
    head, tail = CORRECTNESS_SCHEMAS[name]
    return pa.schema([*head, *_COMMON_TAIL, *tail, ("conflict_pairs", _PAIRS), ("sampled_conflict_pairs", _PAIRS)])


def battle(qid: str, winner: str, first: str, second: str, *, language: str = "English", **flags: bool) -> dict:
    """One PPE-Human-Preference-V1 row; `flags` set hard_prompt, easy_prompt, if_prompt, math_prompt, is_code."""
    la, lb = len(first), len(second)
    return {
        "question_id": qid, "model_a": "gpt-4o-2024-05-13", "model_b": "llama-3-70b-instruct", "winner": winner,
        "prompt": f"Question {qid}?", "response_1": first, "response_2": second, "language": language,
        "conv_metadata": {"context_a_tokens": 10, "context_b_tokens": 10, "sum_assistant_a_tokens": la,
                          "sum_assistant_b_tokens": lb, "sum_user_tokens": 5, "turns": 1},
        "is_code": flags.get("is_code", False), "is_refusal": False,
        "category_tag": {"criteria_v0.1": dict.fromkeys(("complexity", "creativity", "domain_knowledge",
                                                         "problem_solving", "real_world", "specificity",
                                                         "technical_accuracy"), False),
                         "if_v0.1": {"if": flags.get("if_prompt", False), "score": 1},
                         "math_v0.1": {"math": flags.get("math_prompt", False)}},
        "sim": 0.5, "length_a": la, "length_b": lb, "token_diff": 0.1,
        "longer_won": "tie" if winner.startswith("tie") else ("a" if (la > lb) == (winner == "model_a") else "b"),
        "hard_prompt": flags.get("hard_prompt", False), "easy_prompt": flags.get("easy_prompt", False),
        "if_prompt": flags.get("if_prompt", False), "math_prompt": flags.get("math_prompt", False),
    }  # fmt: skip


def _own_fields(name: str, i: int) -> dict[str, Any]:
    """Plausible values of a set's own fields (never read by the loader beyond telling the set)."""
    kwargs = dict.fromkeys(name for name in _KWARGS.names)
    return {
        "mmlu_pro": {"question": f"q{i}", "options": ["a", "b"], "answer": "A", "answer_index": 0,
                     "category": "math", "parsed_outputs": ["A"] * K},
        "math": {"problem": f"p{i}", "level": "Level 3", "type": "Algebra", "solution": "4",
                 "sanitized_solution": "4", "parsed_outputs": ["4"] * K},
        "gpqa": {"Question": f"q{i}", "Subdomain": "Physics", "Record ID": f"rec{i}", "High-level domain": "Physics",
                 "choices": ["a", "b"], "correct_choice_index": 0, "correct_choice": "a", "canary_string": "c",
                 "parsed_outputs": ["A"] * K},
        "ifeval": {"ifeval_prompt": f"p{i}", "key": 1000 + i, "instruction_id_list": ["length_constraints:x"],
                   "kwargs": [kwargs], "score_data": [{"inst_level_loose_acc": [True], "inst_level_strict_acc": [True],
                                                      "prompt_level_loose_acc": True,
                                                      "prompt_level_strict_acc": True}] * K},
        "mbpp_plus": {"task_id": i, "code": "def f(): pass", "source_file": "x.py", "test_imports": [],
                      "test_list": ["assert f() is None"], "test": "check(f)"},
    }[name]  # fmt: skip


def best_of_k(name: str, i: int, answers: list[str], correct: list[bool], pairs: list[list[int]],
              model: str = "gpt-4o-mini-2024-07-18") -> dict[str, Any]:  # fmt: skip
    """One row of a Best-of-K set: K answers (padded with short wrong ones), their correctness and sampled pairs."""
    answers = answers + [f"x{n}" for n in range(K - len(answers))]
    correct = correct + [False] * (K - len(correct))
    conflicts = [[a, b] for a in range(K) for b in range(a + 1, K) if correct[a] != correct[b]]
    row = {"question_id": f"{name}-{i:04d}", "model_name": model, "prompt": f"Solve problem {i} of {name}.",
           **{f"response_{n + 1}": t for n, t in enumerate(answers)}, "scores": correct,
           "mean_score": sum(correct) / K, "conflict_pairs": conflicts, "sampled_conflict_pairs": pairs}  # fmt: skip
    return row | _own_fields(name, i)


def write_split(directory: Path, split: str, rows: list[dict[str, Any]], schema: pa.Schema) -> Path:
    """The rows as the hub's shard (`data/<split>-00000-of-00001.parquet`), put in `directory` as `data fetch` puts
    it."""
    path = directory / f"{split}-00000-of-00001.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return path


def write_preference(directory: Path, rows: list[dict[str, Any]]) -> Path:
    return write_split(directory, "test", rows, PREFERENCE_SCHEMA)


def write_correctness(root: Path, rows: dict[str, list[dict[str, Any]]]) -> Path:
    """Each set's rows in its own folder (as `data fetch` lays them out: root/<set>/...)."""
    for name, sets_rows in rows.items():
        write_split(root / name, "train", sets_rows, correctness_schema(name))
    return root
