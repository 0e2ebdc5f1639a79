"""The Python API against a real vLLM CPU server (the session's tiny reward model): a run equals the CLI's for the
same config, and a second call resumes from the store (nothing sent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import CpuServers
from helpers_cli import cli
from helpers_data import require_rmbench

import rmbench_client as rmb

pytestmark = pytest.mark.server


def test_evaluate_equals_the_cli_and_resumes(cpu_servers: CpuServers, tmp_path: Path) -> None:
    data = require_rmbench()
    data_cfg = cpu_servers.config.to_data(exclude_none=True) | {"limit": 4, "data": str(data)}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(data_cfg))
    result = rmb.evaluate(config, out=tmp_path / "api")
    proc = cli("run", "--config", str(config), "--out", str(tmp_path / "cli"), "--json", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    by_cli = json.loads(proc.stdout)
    for key in ("domains", "overall", "style_bias", "identity", "prompts", "scored", "complete"):
        assert result.summary[key] == by_cli[key], key
    assert result.sent > 0 and result.all_scored
    assert result.headline.value == by_cli["overall"]["avg"]
    again = rmb.evaluate(config, out=tmp_path / "api")  # the store holds every score: nothing is sent
    assert again.sent == 0 and again.summary["overall"] == result.summary["overall"]
    more = rmb.evaluate(config, out=tmp_path / "api", limit=6)  # only the two new prompts go out
    assert 0 < more.sent < result.sent and more.scored == 6
