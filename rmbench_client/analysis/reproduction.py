"""`reproduce`: a finished run run again as it recorded itself, and whether the two agree.

What is run again is what the run's stamp records (results/stamp.py; `config.yaml` for a run from before stamps):
its benchmark, its settings, its model's servers (or others named by the caller: where the servers are and how to
reach them, `roles.*` and `client.*`, or the chat template's file), on the same data. The data is checked by content
first: a file that differs from what the run scored is refused, named, before any server is asked, and checked
again after. The servers are asked afresh (`fresh`: no stored score is reused) into a directory of its own (default
`<RUN_DIR>-reproduction`), and each prompt's numbers are compared with the recorded ones within a tolerance
(results/agreement.py); each model's fingerprint (its answers to fixed probes, taken at start) says whether a server
serves the recorded checkpoint.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from .. import arguments
from .. import constants as C
from ..api import evaluate
from ..backends.identity import fingerprints_match, judge_identity, same_model
from ..benchmarks import registry
from ..config.loading import config_of, read_yaml
from ..config.schema import RunConfig
from ..datasets import load_dataset
from ..errors import ConfigError, DataError
from ..examples import PromptScores
from ..redaction import MASK
from ..results.agreement import Agreement, agreement
from ..results.data_hashes import changed_files, changed_prompts
from ..results.score_files import read_scores
from ..results.stamp import Origin, call_text, made_by
from ..results.summary import RunSummary, load_summary
from ..results.typed import BenchmarkResult, Estimate, in_api_words, result_of

SUFFIX = "-reproduction"  # the default directory: beside the run, its name and this
# what a reproduction may set: where the servers are and how they are reached, and the chat templates' files (a
# template's content is the identity's digest, compared below); everything else is the run's
CHANGEABLE = ("roles.", "client.", "reward.template", "dpo.template")


@dataclass(frozen=True)
class ModelCheck:
    """One role's model against the run's: `same` when the server serves the recorded model (its fingerprint within
    `C.FINGERPRINT_TOLERANCE`, or a judge's served identity), False when not, None when nothing was recorded."""

    role: str
    same: bool | None
    said: str


@dataclass(frozen=True)
class Reproduction:
    """A run reproduced: the run (`run`, as `load_result` reads it) and the reproduction's own result (`result`,
    its `run_dir` where it ran), both headlines, and the prompts compared (`agreement`: how many, those whose
    numbers differ beyond its `tolerance`, |a - b| <= tolerance * max(1, |a|) with a the recorded number, those the
    run scored that were not scored again, the largest difference of a number and its prompt); each role's model
    against the recorded one; notes (what was read or set otherwise than the run did). `agree`: every prompt the
    run scored was scored again within the tolerance."""

    run: BenchmarkResult
    result: BenchmarkResult
    headline_name: str
    recorded: Estimate
    reproduced: Estimate
    agreement: Agreement
    models: tuple[ModelCheck, ...]
    notes: tuple[str, ...] = ()

    @property
    def agree(self) -> bool:
        return self.agreement.agree

    @property
    def run_dir(self) -> Path:
        """The run reproduced."""
        return self.run.run_dir


@dataclass(frozen=True)
class Plan:
    """A reproduction ready to run: its config, and the run's summary, result and per-prompt scores."""

    cfg: RunConfig
    summary: RunSummary
    run: BenchmarkResult
    scores: list[PromptScores]
    notes: list[str]


def recorded_config(run_dir: Path) -> tuple[dict[str, Any], RunSummary, list[str]]:
    """The run's config as recorded (its stamp's, else config.yaml's), its summary, and a note where it is not the
    stamp's. DataError when the directory holds no scored run."""
    try:
        summary = load_summary(run_dir / C.SUMMARY_FILE)
    except FileNotFoundError:
        raise DataError(f"{run_dir}: not a run directory (no {C.SUMMARY_FILE})") from None
    if not summary.info.scored:
        raise DataError(f"{run_dir}: the run scored no prompt: nothing to reproduce")
    stamp = summary.info.stamp
    if stamp is not msgspec.UNSET and stamp.config:
        return dict(stamp.config), summary, []
    path = run_dir / C.CONFIG_FILE
    if not path.is_file():
        raise DataError(f"{run_dir}: neither a stamp in {C.SUMMARY_FILE} nor a {C.CONFIG_FILE}: the run's settings "
                        "are not recorded")  # fmt: skip
    return read_yaml(path), summary, [f"the run has no stamp (an older client): its settings are {path}'s"]


def _data(recorded: dict[str, Any], summary: RunSummary, data: str | Path | None) -> str:
    """Where the data is read from: `data`, else where the run read it: its config's path where it is there (a
    config.yaml's may be relative to where the run was started), else the files its summary names (one, or the
    folder they share)."""
    if data is not None:
        return str(data)
    given = recorded.get("data")
    if isinstance(given, str) and Path(given).exists():
        return given
    sources = summary.info.data.sources
    if sources:
        return sources[0] if len(sources) == 1 else os.path.commonpath(sources)
    if isinstance(given, str):
        return given  # not there: loading it says so
    raise DataError("the run names no data files (an older run): give the data's path (--data)")


def _masked_endpoints(cfg: RunConfig) -> list[str]:
    return [role for role in cfg.roles_used() if any(MASK in url for url in cfg.roles[role].urls())]


def _check_data(cfg: RunConfig, summary: RunSummary) -> list[str]:
    """DataError naming a data file that is not what the run scored (before any server is asked); the ids of
    prompts this client reads otherwise than the run's did (same files), for the notes."""
    bench = registry.get(cfg.benchmark)
    dataset = load_dataset(bench, cfg.data, cfg.data_fields)
    recorded = summary.info.data
    problems = changed_files(recorded.sha256, dataset.sources) if recorded.sha256 else []
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise DataError(f"{problems[0]}{more}: reproduce scores only the data the run scored")
    examples = dataset.examples[: cfg.limit] if cfg.limit is not None else dataset.examples
    hashes = recorded.prompt_sha256
    return changed_prompts(hashes, examples) if hashes is not None else []


def plan(run_dir: Path, out: str | Path | None, data: str | Path | None, overrides: Mapping[str, Any] | None) -> Plan:
    """The reproduction's config and the run's records, every check that needs no server passed."""
    recorded, summary, notes = recorded_config(run_dir)
    changes = {k: v for k, v in (overrides or {}).items() if v is not None}
    fixed = [k for k in changes if not k.startswith(CHANGEABLE)]
    if fixed:
        raise ConfigError(f"reproduce runs the run's own settings: {', '.join(sorted(fixed))} cannot be changed (the "
                          "servers can: roles.*, client.*, and the templates' files)")  # fmt: skip
    target = Path(out) if out is not None else run_dir.parent / f"{run_dir.name}{SUFFIX}"
    if target.resolve() == run_dir.resolve():
        raise ConfigError(f"{target} (--out) is the run itself: a reproduction runs into a directory of its own")
    changes |= {"out": str(target), "data": _data(recorded, summary, data)}
    cfg = config_of(recorded, changes, f"{run_dir}'s recorded config")
    if masked := _masked_endpoints(cfg):
        raise ConfigError(f"the run's {', '.join(masked)} endpoint was recorded masked (it held credentials): give "
                          "it again (--endpoint, or overrides roles.<role>.endpoints)")  # fmt: skip
    files = run_dir / C.SAMPLES_FILE
    if not files.is_file():
        raise DataError(f"{run_dir}: no {C.SAMPLES_FILE}: the run's per-prompt scores are needed to compare")
    scores = read_scores([files])[1]
    if differ := _check_data(cfg, summary):
        notes.append(f"{len(differ)} prompt(s) (first {differ[0]}) read from the same files differ from what the "
                     "run scored (this client reads them otherwise): they are compared all the same")  # fmt: skip
    return Plan(cfg, summary, result_of(run_dir, summary.raw), scores, notes)


def _named(served: Mapping[str, Any]) -> str:
    """A served identity in words: its name, and its path or revision where the server reports one."""
    name = served.get("id") or served.get("model_id") or "?"
    where = served.get("root") or served.get("model_sha")
    return f"{name} at {where}" if where else str(name)


def check_models(recorded: Mapping[str, Any], now: Mapping[str, Any]) -> list[ModelCheck]:
    """Each role's model in the run's identity against the reproduction's."""
    before, after = recorded.get("models") or {}, now.get("models") or {}
    checks = []
    for role, was in before.items():
        found = after.get(role)
        if not isinstance(was, Mapping) or not isinstance(found, Mapping):
            checks.append(ModelCheck(role, None, f"{role}: not asked again"))
            continue
        served, fingerprint = found.get("served") or {}, found.get("fingerprint")
        name = served.get("id") or served.get("model_id") or "?"
        if was.get("fingerprint") is None or fingerprint is None:  # a judge: what its server reports
            same = judge_identity(was.get("served") or {}) == judge_identity(served)
            said = (
                "the same model (as its server reports it)" if same else f"another model: the server reports {served}"
            )
        elif not same_model(was.get("served") or {}, served):
            same, said = False, f"another model: {_named(served)}, the run's {_named(was.get('served') or {})}"
        else:
            same = fingerprints_match(fingerprint, was["fingerprint"])
            gap = max((abs(a - b) for a, b in zip(fingerprint, was["fingerprint"], strict=False)), default=0.0)
            said = (f"the same checkpoint ({name}: its fingerprint within {C.FINGERPRINT_TOLERANCE:g})" if same else
                    f"another checkpoint of {name}, or one computing otherwise: its fingerprint differs from the "
                    f"recorded one by up to {gap:.3g}")  # fmt: skip
        checks.append(ModelCheck(role, same, f"{role}: {said}"))
    return checks


def compared(planned: Plan, result: BenchmarkResult, tolerance: float) -> Reproduction:
    """The reproduction against the run; DataError when the data it read changed while it ran."""
    now = result.summary.get("data", {}).get("sha256") or {}
    recorded = planned.summary.info.data.sha256
    if recorded and sorted(now.values()) != sorted(recorded.values()):
        raise DataError(f"{result.run_dir}: the data changed while the reproduction ran: its numbers are not of the "
                        "run's data")  # fmt: skip
    files = result.run_dir / C.SAMPLES_FILE
    found = agreement(planned.scores, read_scores([files])[1] if files.is_file() else [], tolerance)
    notes = list(planned.notes)
    if result.aborted:
        notes.append(f"the reproduction stopped early: {result.aborted}")
    return Reproduction(
        run=planned.run,
        result=result,
        headline_name=planned.run.headline_name,
        recorded=planned.run.headline,
        reproduced=result.headline,
        agreement=found,
        models=tuple(check_models(planned.summary.info.identity, result.summary.get("identity") or {})),
        notes=tuple(notes),
    )


def reproduce(
    run_dir: str | Path,
    *,
    out: str | Path | None = None,
    data: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    tolerance: float = C.REPRODUCE_TOLERANCE,
    progress: bool = False,
    handle_signals: bool = True,
) -> Reproduction:
    """Run a finished run again, as `rmbench-client reproduce` does, and compare (module docstring). `out`: where
    (default `<run_dir>-reproduction`; what is there is replaced); `data`: where its data lies now (default where
    the run read it; its content must be what the run scored); `overrides`: where the servers are and how they
    are reached, by dotted keys (`{"roles.reward.endpoints": ["http://127.0.0.1:8000"]}`: `roles.*`, `client.*`,
    `reward.template`, `dpo.template`); `tolerance`: how far two numbers may lie apart and agree. The reproduction's
    summary is stamped with the run it reproduces (`stamp.reproduces`). Signals as in `evaluate`.

    Raises:
        TypeError: an argument of the wrong type.
        ConfigError: `tolerance` is below 0, an override changes the run's settings, `out` is the run itself, or an
            endpoint was recorded masked and is not given again.
        DataError: `run_dir` holds no scored run or no per-prompt scores, or a data file is not what the run scored
            (named; before any server is asked).
        RunLockedError, EndpointError: as `evaluate`.
    """
    arguments.paths(run_dir=run_dir, out=out, data=data)
    arguments.flags(progress=progress, handle_signals=handle_signals)
    tolerance = arguments.tolerance(tolerance)
    source = Path(run_dir)
    call = call_text("reproduce", run_dir, out=out, data=data, overrides=overrides, tolerance=tolerance)
    with in_api_words(), made_by(Origin(call=call, reproduces=str(source))):
        planned = plan(source, out, data, overrides)
        result = evaluate(planned.cfg, fresh=True, progress=progress, handle_signals=handle_signals)
        return compared(planned, result, tolerance)


__all__ = ["Agreement", "ModelCheck", "Reproduction", "reproduce"]
