"""docs/python-api.md's "From a training script" example, run as written on the tiny models: two checkpoints
written, each served through vLLM's CPU build, RM-Bench and RewardBench 2 evaluated (4 prompts each) and logged
to MLflow's local file store at the checkpoint's step."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, TINY_MODELS, ensure_server_side, port
from helpers_data import require_rmbench
from hub_schemas import RB2_SCHEMA, rb2_record, write_parquet

pytestmark = pytest.mark.server


def example_code() -> str:
    page = (REPO / "docs" / "python-api.md").read_text(encoding="utf-8")
    section = page[page.index("## From a training script") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_training_script_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ensure_server_side()  # the server environment and the tiny models (a fresh clone may run this first)
    data = tmp_path / "data"
    data.mkdir()
    (data / "rm-bench").symlink_to(require_rmbench())
    four = ["The right answer, stated plainly.", "A wrong answer.", "Another wrong one.", "Off topic entirely."]
    records = [rb2_record(f"{i}", s, four[:1], four[1:], prompt=f"Question {i}?")
               for i, s in enumerate(("Factuality", "Precise IF", "Math", "Safety", "Focus"))]  # fmt: skip
    (data / "reward-bench-2").mkdir()
    write_parquet(data / "reward-bench-2" / "test-00000-of-00001.parquet", records, RB2_SCHEMA)
    work = tmp_path / "run"
    env = os.environ | {"BASE_MODEL": str(TINY_MODELS / "reward"), "RMBENCH_DATA_ROOT": str(data),
                        "WORK_DIR": str(work), "EVAL_PORT": str(port(41)), "EVAL_LIMIT": "4"}  # fmt: skip
    env.pop("RMBENCH_DATA_DIR", None)
    proc = subprocess.run([sys.executable, "-c", example_code()], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "step 100 rm-bench", "step 100 reward-bench-2", "step 200 rm-bench", "step 200 reward-bench-2"
    ]  # fmt: skip
    for step in (100, 200):
        for bench in ("rm-bench", "reward-bench-2"):
            assert (work / "eval" / f"checkpoint-{step}" / bench / "summary.json").is_file()
    # MLflow's file store holds the numbers at each step
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 reads its file store only when allowed

    client = MlflowClient(tracking_uri=f"file:{work / 'mlruns'}")
    experiment = client.get_experiment_by_name("reward-model")
    (run,) = client.search_runs([experiment.experiment_id])
    history = client.get_metric_history(run.info.run_id, "rm-bench/headline")
    assert sorted(m.step for m in history) == [100, 200]
    assert {m.step for m in client.get_metric_history(run.info.run_id, "reward-bench-2/headline")} == {100, 200}
