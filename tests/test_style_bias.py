"""Style-bias diagnostics: style preference at equal substance and the score-length rank correlation, on
constructed scores with known answers and on the baselines, whose answers the data itself gives."""

from __future__ import annotations

import io
import json
import random
import warnings

import numpy as np
import pytest
from helpers_data import require_rmbench
from helpers_scoring import score
from rich.console import Console
from scipy.stats import spearmanr

from rmbench_client.benchmarks.rm_bench import constants as rmbench_c
from rmbench_client.benchmarks.shared.style_bias import spearman
from rmbench_client.cli import main
from rmbench_client.config.loading import load_config
from rmbench_client.datasets import load_dataset
from rmbench_client.errors import DataError
from rmbench_client.examples import PromptScores
from rmbench_client.report.printing import print_summary
from rmbench_client.run.runner import run

PAIRS = ("concise<detailed", "concise<markdown", "detailed<markdown")


def rm(rid: str, chosen, rejected, domain: str = "chat") -> PromptScores:
    return PromptScores(rid, domain, tuple(map(float, chosen)), tuple(map(float, rejected)))


def test_always_elaborate_never_elaborate_and_ties():
    up = [rm(f"chat/{i}", [1, 2, 3], [0, 1, 2]) for i in range(20)]
    down = [rm(f"code/{i}", [3, 2, 1], [2, 1, 0], "code") for i in range(20)]
    flat = [rm(f"safety/{i}", [1, 1, 1], [0, 0, 0], "safety") for i in range(20)]
    bias = score("rm-bench", up + down + flat, samples=200)["style_bias"]
    assert bias["styles"] == list(rmbench_c.STYLES)
    assert list(bias["pairs"]) == list(PAIRS)
    for pair in PAIRS:
        assert bias["groups"]["chat"][pair]["prefers"] == 1.0
        assert bias["groups"]["code"][pair]["prefers"] == 0.0
        assert bias["groups"]["safety"][pair] | {"ci": None} == {"prefers": 0.0, "ties": 1.0, "n": 40, "ci": None}
        pooled = bias["pairs"][pair]
        assert pooled["prefers"] == pytest.approx(1 / 3) and pooled["ties"] == pytest.approx(1 / 3)
        assert pooled["n"] == 120  # (prompt, side) triples
        # stratified by domain: every replicate keeps 20 prompts per domain, so the pooled rate cannot move
        assert pooled["ci"] == pytest.approx([1 / 3, 1 / 3])
    assert "length_correlation" not in bias  # no lengths given


def test_sides_count_separately_and_interval_covers():
    rng = random.Random(0)
    records = []
    expected = {pair: 0 for pair in PAIRS}
    for i in range(300):
        c = [rng.random() for _ in range(3)]
        r = [rng.random() for _ in range(3)]
        records.append(rm(f"chat/{i}", c, r))
        for k, (a, b) in enumerate(((0, 1), (0, 2), (1, 2))):
            expected[PAIRS[k]] += (c[b] > c[a]) + (r[b] > r[a])
    bias = score("rm-bench", records, samples=500)["style_bias"]
    for pair in PAIRS:
        got = bias["pairs"][pair]
        assert got["prefers"] == pytest.approx(expected[pair] / 600)
        lo, hi = got["ci"]
        assert lo < got["prefers"] < hi and hi - lo < 0.15


def test_spearman_matches_scipy_with_ties():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 12, size=200).astype(float)  # many ties
    y = x + rng.normal(0, 4, size=200)
    assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    assert np.isnan(spearman(np.ones(5), np.arange(5.0)))


def test_length_correlation_rewardbench_per_subset():
    records, lengths = [], {}
    for i in range(40):
        subset = "alpacaeval-easy" if i < 20 else "hep-python"
        lc, lr = 100 + 7 * i, 50 + 3 * i
        sign = 1.0 if subset == "alpacaeval-easy" else -1.0  # the score follows length, or runs against it
        records.append(PromptScores(str(i), subset, (sign * lc,), (sign * lr,)))
        lengths[str(i)] = ((lc,), (lr,))
    bias = score("reward-bench", records, lengths=lengths)["style_bias"]
    assert "pairs" not in bias  # one response a side: no styles
    corr = bias["length_correlation"]
    assert corr["groups"]["alpacaeval-easy"]["rho"] == pytest.approx(1.0)
    assert corr["groups"]["hep-python"]["rho"] == pytest.approx(-1.0)
    assert corr["groups"]["hep-python"]["n"] == 40  # chosen + rejected responses
    pooled = [s for r in records for s in (*r.chosen, *r.rejected)]
    lens = [n for i in range(40) for n in (*lengths[str(i)][0], *lengths[str(i)][1])]
    assert corr["rho"] == pytest.approx(spearmanr(pooled, lens).statistic)
    assert corr["n"] == 80
    assert "style_bias" not in score("reward-bench", records)  # nothing to say without lengths


def test_an_undefined_length_correlation_says_why(capsys):
    """A constant score (a reward model that says one number) has no rank correlation with length: rho and its
    interval are null, `why` says so, and `score`'s terminal prints it; so for a group whose lengths are equal."""
    records = [PromptScores(str(i), "alpacaeval-easy", (1.0,), (1.0,)) for i in range(6)]
    records.append(PromptScores("x", "hep-go", (2.0,), (1.0,)))
    lengths = {str(i): ((10 + i,), (20 + i,)) for i in range(6)} | {"x": ((5,), (5,))}
    summary = score("reward-bench", records, lengths=lengths)
    corr = summary["style_bias"]["length_correlation"]
    easy = corr["groups"]["alpacaeval-easy"]
    assert easy["rho"] is None and easy["ci"] is None
    assert easy["why"] == "every response has the same score: no rank correlation"
    assert corr["groups"]["hep-go"]["why"] == "every response has the same length: no rank correlation"
    assert corr["rho"] is not None and "why" not in corr  # pooled: both vary
    out = io.StringIO()
    print_summary(summary, "t", console=Console(file=out, width=200))
    assert "undefined: length rho of alpacaeval-easy: every response has the same score" in out.getvalue()


def test_judge_results_have_no_style_bias():
    judged = [PromptScores(f"chat/{i}", "chat", (), (), results=(1.0,) * 9) for i in range(5)]
    assert "style_bias" not in score("rm-bench", judged)


def test_lengths_must_cover_every_prompt():
    records = [rm("chat/1", [1, 2, 3], [0, 1, 2]), rm("chat/2", [1, 2, 3], [0, 1, 2])]
    with pytest.raises(DataError, match="chat/2"):
        score("rm-bench", records, lengths={"chat/1": ((1, 2, 3), (1, 2, 3))})


# --- the baselines, end to end ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def baseline_summaries(tmp_path_factory):
    data = require_rmbench()
    root = tmp_path_factory.mktemp("bias")
    out = {}
    for model in ("baseline:longer", "baseline:random"):
        cfg = load_config(None, {"model": model, "data": str(data), "out": str(root / model.split(":")[1])})
        out[model] = run(cfg, progress=False).summary
    return out


@pytest.mark.slow
def test_longer_baseline_prefers_elaborate_styles_and_follows_length(baseline_summaries):
    examples = load_dataset("rm-bench", require_rmbench()).examples
    bias = baseline_summaries["baseline:longer"]["style_bias"]
    for k, (a, b) in enumerate(((0, 1), (0, 2), (1, 2))):
        # the data decides: a longer-wins model prefers style b exactly where b is the longer text
        longer = sum(len(side[b]) > len(side[a]) for ex in examples for side in (ex.chosen, ex.rejected))
        equal = sum(len(side[b]) == len(side[a]) for ex in examples for side in (ex.chosen, ex.rejected))
        got = bias["pairs"][PAIRS[k]]
        assert got["prefers"] == pytest.approx(longer / (2 * len(examples)))
        assert got["ties"] == pytest.approx(equal / (2 * len(examples)))
        assert got["prefers"] > 0.97
    corr = bias["length_correlation"]
    assert corr["rho"] == pytest.approx(1.0) and corr["ci"] == pytest.approx([1.0, 1.0])
    assert corr["n"] == 6 * len(examples)
    assert all(g["rho"] == pytest.approx(1.0) for g in corr["groups"].values())


def test_random_baseline_has_no_style_preference(baseline_summaries):
    bias = baseline_summaries["baseline:random"]["style_bias"]
    for pair in PAIRS:
        got = bias["pairs"][pair]
        # identical texts score the same (a tie); every other pair is a coin flip
        assert abs(got["prefers"] - (1 - got["ties"]) / 2) < 0.05, (pair, got)
    lo, hi = bias["length_correlation"]["ci"]
    assert lo < 0 < hi


def test_terminal_table_shows_style_bias(baseline_summaries):
    buf = io.StringIO()
    summary = baseline_summaries["baseline:longer"]
    print_summary(summary, "longer", Console(file=buf, width=200))
    text = buf.getvalue()
    assert "style bias" in text and "concise < detailed" in text and "length ρ" in text
    pooled = summary["style_bias"]["pairs"]["concise<markdown"]
    assert f"{100 * pooled['prefers']:.1f} ±" in text
    assert "1.00 [1.00, 1.00]" in text
    buf = io.StringIO()  # a terminal's default 80 columns: the correlation's interval stays on one line
    print_summary(summary, "longer", Console(file=buf, width=80))
    assert "1.00 [1.00, 1.00]" in buf.getvalue()


def test_score_command_reports_style_pairs(tmp_path, capsys):
    line = {"id": "chat/1", "domain": "chat", "score_chosen": [1, 2, 3], "score_rejected": [0, 1, 2]}
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    assert main(["score", str(path), "--json"]) == 0
    bias = json.loads(capsys.readouterr().out)["style_bias"]
    assert {p: v["prefers"] for p, v in bias["pairs"].items()} == dict.fromkeys(PAIRS, 1.0)
    assert "length_correlation" not in bias  # a score file carries no texts


def test_pairwise_data_carries_the_length_correlation():
    records = [PromptScores(str(i), "mine", (float(i),), (float(-i - 1),)) for i in range(10)]
    lengths = {str(i): ((100 + i,), (50 - i,)) for i in range(10)}
    corr = score("pairwise", records, lengths=lengths)["style_bias"]["length_correlation"]
    assert corr["rho"] == pytest.approx(1.0) and corr["groups"]["mine"]["n"] == 20


def test_rewardbench2_has_no_style_bias_yet():
    records = [PromptScores(str(i), "Factuality", (1.0,), (0.0, 0.5, 0.2)) for i in range(5)]
    lengths = {str(i): ((10,), (20, 30, 40)) for i in range(5)}
    assert "style_bias" not in score("reward-bench-2", records, lengths=lengths)


def test_bootstrap_rhos_equal_ranking_each_resample_afresh():
    """The O(n) ranking of replicates (weights of resampled prompts) gives what scipy gives on each resample."""
    from rmbench_client.benchmarks.shared import bootstrap
    from rmbench_client.benchmarks.shared.style_bias import _replicate_rhos

    rng = np.random.default_rng(1)
    for n, k in [(50, 6), (7, 2), (300, 2), (2, 2)]:
        scores = np.round(rng.normal(size=(n, k)), 1)  # rounded: many ties
        lengths = rng.integers(1, 20, size=(n, k)).astype(float)
        if n == 2:
            scores[:] = 1.0  # constant: no rho
        # small chunks: the replicates arrive in several pieces, as they do for a large dataset
        chunks = list(bootstrap.stratified_chunks([n // 2, n - n // 2], rng, 300, max_elements=50 * n))
        idx = np.concatenate(chunks)
        assert idx.shape == (300, n) and len(chunks) > 1
        fast = np.concatenate(list(_replicate_rhos(scores, lengths, chunks)))
        with warnings.catch_warnings():  # scipy warns on a constant input (rho undefined: NaN)
            warnings.simplefilter("ignore")
            brute = np.array([spearmanr(scores[rows].ravel(), lengths[rows].ravel()).statistic for rows in idx])
        np.testing.assert_allclose(fast, brute, rtol=0, atol=1e-12)
        assert np.array_equal(np.isnan(fast), np.isnan(brute))


def _correlated(prompts: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(prompts, 6) scores and lengths: lengths log-normal, scores following their log and a per-prompt shift."""
    rng = np.random.default_rng(seed)
    shift = rng.normal(size=(prompts, 1))
    lengths = np.exp(rng.normal(6.0, 0.7, size=(prompts, 6)) + 0.3 * shift).round()
    return 0.3 * np.log(lengths) + rng.normal(size=(prompts, 6)) + 0.5 * shift, lengths


def test_the_length_correlations_fewer_replicates_give_the_interval_many_give():
    """The length correlation's interval comes from constants.LENGTH_BOOTSTRAP_SAMPLES replicates: each seed's ends
    lie within a fraction of the half-width of the ends that 20 times as many replicates give."""
    from rmbench_client import constants as C
    from rmbench_client.benchmarks.shared.style_bias import length_correlation

    scores, lengths = _correlated(400, 5)
    many = length_correlation({"all": scores}, {"all": lengths}, np.random.default_rng(99), 20 * 200)
    assert many.ci is not None and many.rho is not None
    half = (many.ci[1] - many.ci[0]) / 2
    for seed in range(5):
        got = length_correlation({"all": scores}, {"all": lengths}, np.random.default_rng(seed),
                                 C.LENGTH_BOOTSTRAP_SAMPLES)  # fmt: skip
        assert got.rho == many.rho and got.ci is not None
        assert abs(got.ci[0] - many.ci[0]) < 0.35 * half and abs(got.ci[1] - many.ci[1]) < 0.35 * half, (got, many)


def test_a_summarys_length_correlation_uses_its_own_replicate_count(monkeypatch):
    from rmbench_client import constants as C
    from rmbench_client.benchmarks.shared import style_bias

    counts: list[int] = []
    real = style_bias.length_correlation
    monkeypatch.setattr(style_bias, "length_correlation", lambda *a: counts.append(a[3]) or real(*a))
    scores, lengths = _correlated(20, 1)
    records = [PromptScores(str(i), "chat", tuple(s[:3]), tuple(s[3:])) for i, s in enumerate(scores)]
    by_id = {str(i): (tuple(int(v) for v in n[:3]), tuple(int(v) for v in n[3:])) for i, n in enumerate(lengths)}
    assert style_bias.diagnose(records, 3, rmbench_c.STYLES, by_id) is not None
    assert style_bias.diagnose(records, 3, rmbench_c.STYLES, by_id, samples=50) is not None  # asked for: as asked
    assert counts == [C.LENGTH_BOOTSTRAP_SAMPLES, 50] and C.LENGTH_BOOTSTRAP_SAMPLES < C.BOOTSTRAP_SAMPLES
