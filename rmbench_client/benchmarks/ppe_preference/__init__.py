"""PPE Preference (lmarena's Preference Proxy Evaluations, Human-Preference-V1): real Chatbot Arena battles, a
reward model right when it prefers the human voter's winner; accuracy per category and overall."""

from __future__ import annotations

from ..kinds import PAIRS
from ..spec import Benchmark, HubSource
from . import data, files, scoring, table
from .constants import FLAGS, HUB_REPO, HUB_SPLIT
from .summary import PreferenceSummary

BENCHMARK: Benchmark[PreferenceSummary] = Benchmark(
    name="ppe-preference",
    title="PPE Preference",
    kind=PAIRS,  # a battle's two answers, in overlapping categories
    layout="PPE Human-Preference-V1's test split (parquet, JSON or JSONL): a directory or a file",
    group_field="group",
    files_in=data.files_in,
    parse_record=data.parse_record,
    fields=("question_id", "winner", "prompt", "response_1", "response_2", "language", *FLAGS),
    hub=(HubSource.parquet(HUB_REPO, HUB_SPLIT),),
    numbers=scoring,
    shows=table,
    lines=files,
    unscored="human ties (winner 'tie' or 'tie (bothbad)'): PPE's accuracy counts decisive votes only",
)
