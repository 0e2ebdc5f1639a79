"""The API refuses what it cannot take in its own words: an argument of the wrong type is a TypeError naming the
argument, before anything runs (`fresh="no"` is not taken for true: it would wipe the stored scores), and a
mistake in the config or an option is said with the API's names, not the command line's flags. Baseline runs and
files only; only `rmbench_client`'s public names are used."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from helpers_data import require_rmbench

import rmbench_client as rmb

BASELINE = {"model": "baseline:random", "benchmark": "rm-bench"}


class Recording:
    """A tracker that keeps the steps it is given."""

    def __init__(self) -> None:
        self.steps: list[int | None] = []

    def log(self, metrics: Mapping[str, float], step: int | None, artifacts: Sequence[Path] = ()) -> None:
        self.steps.append(step)

    def close(self) -> None:
        pass


WRONG = [
    ({"trackers": None}, "trackers= takes a list of trackers (or one tracker), not None"),
    ({"trackers": "mlflow"}, "trackers= takes a list of trackers (or one tracker), not 'mlflow'"),
    ({"trackers": [42]}, "trackers= holds 42, which is no tracker"),
    ({"fresh": "no"}, "fresh= must be True or False, not 'no'"),
    ({"fresh": 1}, "fresh= must be True or False, not 1"),
    ({"heatmaps": None}, "heatmaps= must be True or False, not None"),
    ({"step": "x"}, "step= must be an integer or None, not 'x'"),
    ({"step": 1.5}, "step= must be an integer or None, not 1.5"),
    ({"handle_signals": None}, "handle_signals= must be True or False, not None"),
]


@pytest.mark.parametrize(("keys", "said"), WRONG, ids=[", ".join(f"{k}={v!r}" for k, v in w[0].items()) for w in WRONG])
def test_a_wrong_argument_type_is_refused_by_its_name_before_anything_runs(tmp_path, keys, said):
    data = require_rmbench()
    out = tmp_path / "run"
    kept = rmb.evaluate(BASELINE, data=data, out=out, limit=3)  # scores that a wrong `fresh` must not wipe
    with pytest.raises(TypeError, match=re.escape(said)):
        rmb.evaluate(BASELINE, data=data, out=out, limit=3, **keys)
    with pytest.raises(TypeError, match=re.escape(said)):
        rmb.evaluate_suite(BASELINE, benchmarks=["rm-bench"], data_root=data.parent, out=tmp_path / "s", **keys)
    assert not (tmp_path / "s").exists()
    again = rmb.evaluate(BASELINE, data=data, out=out, limit=3)
    assert again.scored == kept.scored == 3 and again.sent == 0  # nothing was forgotten


def test_one_tracker_is_taken_as_a_list_of_one_and_a_numpy_step_as_an_integer(tmp_path):
    import numpy as np

    data = require_rmbench()
    tracker = Recording()
    rmb.evaluate(BASELINE, data=data, out=tmp_path / "run", limit=3, trackers=tracker, step=np.int64(4))
    assert tracker.steps == [4] and type(tracker.steps[0]) is int


def test_the_commands_checks_are_said_in_the_apis_words(tmp_path):
    """A config without a model, and `rescore`'s options, are checked as the command line checks them: the message
    names the API's keys and arguments, never a flag."""
    with pytest.raises(rmb.ConfigError) as no_model:
        rmb.load_config({"type": "reward"})
    assert "served_model" in str(no_model.value) and "--" not in str(no_model.value)
    run = rmb.evaluate(BASELINE, data=require_rmbench(), out=tmp_path / "run", limit=3)
    with pytest.raises(rmb.DataError) as threshold:
        rmb.rescore(run.run_dir / "samples.jsonl", threshold=0.5)
    assert "threshold= is for process benchmarks, not rm-bench" in str(threshold.value)
    assert "--" not in str(threshold.value)
    records = tmp_path / "scores.jsonl"
    records.write_text('{"id": "x", "score_chosen": [1, 2, 3], "score_rejected": [0, 1, 2]}\n')
    with pytest.raises(rmb.DataError) as domain:
        rmb.rescore(records)
    assert "domain=NAME" in str(domain.value) and "--" not in str(domain.value)


@pytest.mark.parametrize("limit", [True, "40", 4.0, 2.5])
def test_a_limit_of_the_wrong_type_is_a_type_error_naming_limit(tmp_path, limit):
    """`limit="40"` is not taken for 40, nor `limit=True` for 1: an integer or None, like `step=`."""
    data = require_rmbench()
    said = f"limit= must be an integer of 1 or more, or None, not {limit!r}"
    with pytest.raises(TypeError, match=re.escape(said)):
        rmb.evaluate(BASELINE, data=data, out=tmp_path / "run", limit=limit)
    with pytest.raises(TypeError, match=re.escape(said)):
        rmb.evaluate_suite(BASELINE, benchmarks=["rm-bench"], data_root=data.parent, out=tmp_path / "s", limit=limit)
    with pytest.raises(TypeError, match=re.escape(said)):
        rmb.watch(tmp_path, BASELINE, out=tmp_path / "w", data_root=data.parent, limit=limit, once=True)
    assert not any((tmp_path / name).exists() for name in ("run", "s", "w"))


def test_a_limit_below_one_is_said_as_the_argument(tmp_path):
    import numpy as np

    data = require_rmbench()
    for limit in (0, -1):
        with pytest.raises(rmb.ConfigError, match=re.escape(f"limit={limit}: score at least 1 prompt")):
            rmb.evaluate(BASELINE, data=data, out=tmp_path / "run", limit=limit)
    assert rmb.evaluate(BASELINE, data=data, out=tmp_path / "run", limit=np.int64(3)).scored == 3  # a numpy count


def test_rescores_threshold_is_checked_as_the_commands_is(tmp_path):
    """`threshold=` is a number from 0 to 1 (`score --threshold` and `prm.threshold` refuse the rest): a string is a
    TypeError naming it, not numpy's error from deep inside; 2.0 is refused, not used."""
    run = rmb.evaluate(BASELINE, data=require_rmbench(), out=tmp_path / "run", limit=3)
    samples = run.run_dir / "samples.jsonl"
    for wrong in ("0.5", True, [0.5]):
        with pytest.raises(
            TypeError, match=re.escape(f"threshold= must be a number from 0 to 1, or None, not {wrong!r}")
        ):
            rmb.rescore(samples, threshold=wrong)
    for wrong in (2.0, -0.1, float("nan")):
        with pytest.raises(
            rmb.ConfigError, match=re.escape(f"threshold={wrong!r}: a step threshold is a number from 0 to 1")
        ):
            rmb.rescore(samples, threshold=wrong)


WATCH_WRONG = [
    ({"poll": "30"}, TypeError, "poll= must be a number of seconds, not '30'"),
    ({"settle": None}, TypeError, "settle= must be a number of seconds, not None"),
    ({"poll": True}, TypeError, "poll= must be a number of seconds, not True"),
    ({"stop": 5}, TypeError, "stop= must be a function (True: stop) or None, not 5"),
    ({"benchmarks": "rm-bench"}, TypeError, "benchmarks takes a sequence of names, not one: benchmarks=['rm-bench']"),
    ({"benchmarks": ["rm-bnech"]}, rmb.ConfigError, "unknown benchmark 'rm-bnech'"),
]


@pytest.mark.parametrize(("keys", "kind", "said"), WATCH_WRONG, ids=[str(w[0]) for w in WATCH_WRONG])
def test_watch_refuses_a_wrong_argument_before_it_watches(tmp_path, keys, kind, said):
    """Refused at the call, named, as `evaluate_suite` refuses them: not at the first checkpoint (perhaps hours
    later), nor as Python's `'<' not supported between 'int' and 'str'`."""
    data = require_rmbench()
    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()  # none yet
    with pytest.raises(kind, match=re.escape(said)):
        rmb.watch(checkpoints, BASELINE, out=tmp_path / "w", data_root=data.parent, once=True, **keys)
    assert not (tmp_path / "w").exists()


def test_an_empty_list_of_benchmarks_is_refused_not_read_as_every_one(tmp_path):
    """`benchmarks=[]` (a filtered list that came out empty) names none: not read as "every benchmark" and then
    refused for one the caller never named ("benchmark reward-bench: no data ...")."""
    data = require_rmbench()
    said = "benchmarks=[] names no benchmark: name one or more, or give None for every one with data"
    with pytest.raises(rmb.ConfigError, match=re.escape(said)):
        rmb.evaluate_suite(BASELINE, benchmarks=[], data_root=data.parent, out=tmp_path / "s", limit=3)
    with pytest.raises(rmb.ConfigError, match=re.escape(said)):
        rmb.watch(tmp_path, BASELINE, benchmarks=(), out=tmp_path / "w", data_root=data.parent, once=True)
    assert not (tmp_path / "s").exists() and not (tmp_path / "w").exists()


@pytest.mark.parametrize(
    ("keys", "said"),
    [
        ({"data": 5}, "data= must be a path (a str or a Path) or None, not 5"),
        ({"out": ["runs"]}, "out= must be a path (a str or a Path) or None, not ['runs']"),
        ({"benchmark": 5}, "benchmark= must be a name (a str) or None, not 5"),
    ],
)
def test_a_path_or_name_of_the_wrong_type_is_a_type_error_naming_it(tmp_path, keys, said):
    with pytest.raises(TypeError, match=re.escape(said)):
        rmb.evaluate(BASELINE, **({"out": tmp_path / "run"} | keys))
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("timeout", "error", "said"),
    [
        ("x", TypeError, "timeout= must be a number of seconds, not 'x'"),
        (0, rmb.ConfigError, "timeout=0: a server needs some seconds"),
        (float("nan"), rmb.ConfigError, "timeout=nan: a server needs some seconds"),
    ],
)
def test_serve_refuses_a_timeout_that_is_no_time_before_it_starts_anything(tmp_path, timeout, error, said):
    config = {"model": "m", "type": "reward", "roles": {"reward": {"served_model": "m", "endpoints": ["http://127.0.0.1:9"],
              "serve": {"model": str(tmp_path / "none")}}}}  # fmt: skip
    with pytest.raises(error, match=re.escape(said)), rmb.serve(config, timeout=timeout, state_dir=tmp_path / "s"):
        pass
    assert not (tmp_path / "s").exists()
