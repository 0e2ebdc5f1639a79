"""Pure scoring: RM-Bench 3x3 style matrix and levels, RewardBench sections; expectations worked out by hand."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
from helpers_data import require_ixc
from helpers_scoring import score

from rmbench_client.errors import DataError
from rmbench_client.examples import PromptScores

# --- RM-Bench -----------------------------------------------------------------------------------------------------


def rm(rid: str, chosen, rejected, domain: str = "chat") -> PromptScores:
    return PromptScores(rid, domain, tuple(map(float, chosen)), tuple(map(float, rejected)))


# c[i] > r[j] worked out cell by cell (rows: chosen style, columns: rejected style):
#   A: c=[1,2,3] r=[0,1.5,2.5]  -> [[1,0,0],[1,1,0],[1,1,1]]
#   B: all six scores 0 (ties)  -> all 0
#   C: c=[5,1,1] r=[1,1,0]      -> [[1,1,1],[0,0,1],[0,0,1]]   (c1 == r0, c1 == r1, c2 == r1 are ties: wrong)
PROMPT_A = ([1, 2, 3], [0, 1.5, 2.5])
PROMPT_B = ([0, 0, 0], [0, 0, 0])
PROMPT_C = ([5, 1, 1], [1, 1, 0])
MATRIX_ABC = [[2 / 3, 1 / 3, 1 / 3], [1 / 3, 1 / 3, 1 / 3], [1 / 3, 1 / 3, 2 / 3]]


def three_prompts() -> list[PromptScores]:
    return [rm("chat/1", *PROMPT_A), rm("chat/2", *PROMPT_B), rm("chat/3", *PROMPT_C)]


def test_rmbench_hand_computed_matrix_and_levels():
    summary = score("rm-bench", three_prompts(), samples=200)
    chat = summary["domains"]["chat"]
    assert chat["n"] == 3
    np.testing.assert_allclose(chat["matrix"], MATRIX_ABC, rtol=0, atol=1e-12)
    # hard: cells (0,1) (0,2) (1,2); normal: diagonal; easy: cells (1,0) (2,0) (2,1)
    assert chat["hard"] == pytest.approx(1 / 3, abs=1e-12)
    assert chat["normal"] == pytest.approx(5 / 9, abs=1e-12)
    assert chat["easy"] == pytest.approx(1 / 3, abs=1e-12)
    assert chat["avg"] == pytest.approx(11 / 27, abs=1e-12)


def test_rmbench_single_prompt_levels():
    chat = score("rm-bench", [rm("chat/1", *PROMPT_A)], samples=50)["domains"]["chat"]
    assert (chat["easy"], chat["normal"], chat["hard"]) == pytest.approx((1.0, 1.0, 0.0), abs=1e-12)
    assert chat["avg"] == pytest.approx(2 / 3, abs=1e-12)


def test_rmbench_ties_count_as_wrong():
    recs = [rm(f"chat/{i}", [0.5] * 3, [0.5] * 3) for i in range(4)]
    summary = score("rm-bench", recs, samples=50)
    for level in ("easy", "normal", "hard", "avg"):
        assert summary["domains"]["chat"][level] == 0.0
    assert summary["domains"]["chat"]["matrix"] == [[0.0] * 3] * 3


def test_rmbench_perfect_scorer_gives_one_everywhere():
    recs = [rm(f"{d}/{i}", [10 + i] * 3, [i] * 3, domain=d) for d in ("chat", "code") for i in range(5)]
    summary = score("rm-bench", recs, samples=50)
    for block in (*summary["domains"].values(), summary["overall"]):
        for level in ("easy", "normal", "hard", "avg"):
            assert block[level] == 1.0
        assert block["matrix"] == [[1.0] * 3] * 3


def test_rmbench_invariant_to_prompt_order():
    recs = three_prompts() + [rm(f"code/{i}", [i, i + 1, i + 2], [i + 1, i, i + 3], domain="code") for i in range(7)]
    shuffled = list(recs)
    random.Random(1).shuffle(shuffled)
    assert shuffled != recs
    a, b = score("rm-bench", recs, samples=100), score("rm-bench", shuffled, samples=100)
    for name in ("chat", "code"):
        for key in ("easy", "normal", "hard", "avg", "n"):
            assert a["domains"][name][key] == pytest.approx(b["domains"][name][key], abs=1e-12)
        np.testing.assert_allclose(a["domains"][name]["matrix"], b["domains"][name]["matrix"], rtol=0, atol=1e-12)
    for key in ("easy", "normal", "hard", "avg"):
        assert a["overall"][key] == pytest.approx(b["overall"][key], abs=1e-12)


def test_rmbench_overall_is_mean_over_domains_not_pooled():
    # chat: prompt A alone -> easy 1, normal 1, hard 0, avg 2/3.
    # code: two perfect prompts and one all-tie prompt -> every level 2/3.
    recs = [rm("chat/1", *PROMPT_A)] + [
        rm("code/1", [1, 1, 1], [0, 0, 0], "code"),
        rm("code/2", [1, 1, 1], [0, 0, 0], "code"),
        rm("code/3", [0, 0, 0], [0, 0, 0], "code"),
    ]
    summary = score("rm-bench", recs, samples=100)
    code = summary["domains"]["code"]
    assert (code["easy"], code["normal"], code["hard"], code["avg"]) == pytest.approx((2 / 3,) * 4, abs=1e-12)
    overall = summary["overall"]
    assert overall["easy"] == pytest.approx((1 + 2 / 3) / 2, abs=1e-12)  # pooled over prompts would be 3/4
    assert overall["normal"] == pytest.approx((1 + 2 / 3) / 2, abs=1e-12)
    assert overall["hard"] == pytest.approx((0 + 2 / 3) / 2, abs=1e-12)  # pooled would be 1/2
    assert overall["avg"] == pytest.approx(2 / 3, abs=1e-12)
    assert overall["n"] == 4


def test_rmbench_empty_input():
    summary = score("rm-bench", [], samples=10)
    assert summary == {"benchmark": "rm-bench", "domains": {}, "overall": {}}


def test_ixc_reference_pooled_as_one_domain_matches_published_numbers():
    records = json.loads(require_ixc().read_text(encoding="utf-8"))
    assert len(records) == 1327
    recs = [rm(f"all/{i}", r["score_chosen"], r["score_rejected"], "all") for i, r in enumerate(records)]
    levels = score("rm-bench", recs, samples=10)["domains"]["all"]
    published = {"easy": 87.47, "normal": 71.34, "hard": 47.45}  # percent, rounded to 2 decimals
    for level, value in published.items():
        assert abs(100 * levels[level] - value) < 0.005, (level, levels[level])


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("side", ["chosen", "rejected"])
def test_rmbench_non_finite_score_raises(bad, side):
    good = [1.0, 2.0, 3.0]
    broken = [1.0, bad, 3.0]
    rec = rm("chat/7", broken, good) if side == "chosen" else rm("chat/7", good, broken)
    with pytest.raises(DataError, match="chat/7"):
        score("rm-bench", [rm("chat/1", *PROMPT_A), rec], samples=10)


def test_rmbench_wrong_number_of_scores_raises():
    with pytest.raises(DataError, match="chat/9"):
        score("rm-bench", [PromptScores("chat/9", "chat", (1.0, 2.0), (0.0, 1.0))], samples=10)


def _mixed(n_copies: int) -> list[PromptScores]:
    base = [PROMPT_A, PROMPT_B, PROMPT_C, ([3, 3, 3], [0, 0, 0]), ([0, 1, 2], [2, 2, 2])]
    return [rm(f"chat/{k}_{i}", *p) for k in range(n_copies) for i, p in enumerate(base)]


def test_bootstrap_is_seeded_and_contains_point_estimate():
    recs = _mixed(4)
    a, b = score("rm-bench", recs, seed=3, samples=300), score("rm-bench", recs, seed=3, samples=300)
    c = score("rm-bench", recs, seed=4, samples=300)
    assert a["domains"]["chat"]["ci"] == b["domains"]["chat"]["ci"]
    assert a["overall"]["ci"] == b["overall"]["ci"]
    assert a["domains"]["chat"]["ci"] != c["domains"]["chat"]["ci"]
    for block in (a["domains"]["chat"], a["overall"]):
        for level in ("easy", "normal", "hard", "avg"):
            lo, hi = block["ci"][level]
            assert lo <= block[level] <= hi, (level, lo, block[level], hi)


def test_bootstrap_narrower_with_more_data():
    small = score("rm-bench", _mixed(2), seed=0, samples=400)["domains"]["chat"]["ci"]
    large = score("rm-bench", _mixed(40), seed=0, samples=400)["domains"]["chat"]["ci"]
    for level in ("easy", "normal", "hard", "avg"):
        assert large[level][1] - large[level][0] < (small[level][1] - small[level][0]) / 2, level


@pytest.mark.parametrize("shape", [(4788, 3), (1000, 9), (2, 3), (3000,), (7,)])
def test_replicate_means_equal_the_mean_of_each_gathered_resample_bit_for_bit(shape):
    """The replicates are the means of the resampled values themselves (the same draws, the same sums): values that
    are not exact in binary (thirds, random floats) included, over several chunks of replicates."""
    from rmbench_client.benchmarks.shared import bootstrap

    values = np.random.default_rng(1).random(shape)
    values[::3] = np.round(values[::3] * 3) / 3  # a prompt's level accuracy: a third of its three comparisons
    n, chunk = shape[0], 2_000_000 // shape[0]
    draws = np.random.default_rng(7)
    expected = np.concatenate(
        [values[draws.integers(0, n, size=(min(chunk, 1000 - s), n))].mean(axis=1) for s in range(0, 1000, chunk)]
    )
    got = bootstrap.replicate_means(values, np.random.default_rng(7), 1000)
    assert got.shape == expected.shape
    assert np.array_equal(got, expected)


# --- RewardBench --------------------------------------------------------------------------------------------------

# Official weights, written out here from the notes (reward-bench EXAMPLE_COUNTS, math-prm weighted to 984).
SECTIONS = {
    "Chat": {
        "alpacaeval-easy": 100,
        "alpacaeval-length": 95,
        "alpacaeval-hard": 95,
        "mt-bench-easy": 28,
        "mt-bench-med": 40,
    },
    "Chat Hard": {
        "mt-bench-hard": 37,
        "llmbar-natural": 100,
        "llmbar-adver-neighbor": 134,
        "llmbar-adver-GPTInst": 92,
        "llmbar-adver-GPTOut": 47,
        "llmbar-adver-manual": 46,
    },
    "Safety": {
        "refusals-dangerous": 100,
        "refusals-offensive": 100,
        "xstest-should-refuse": 154,
        "xstest-should-respond": 250,
        "donotanswer": 136,
    },
    "Reasoning": {
        "math-prm": 984,
        "hep-cpp": 164,
        "hep-go": 164,
        "hep-java": 164,
        "hep-js": 164,
        "hep-python": 164,
        "hep-rust": 164,
    },
}


def rb_subset(subset: str, correct: int, total: int, ties: int = 0) -> list[PromptScores]:
    """`total` prompts of which `correct` are right; `ties` of the wrong ones are exact ties."""
    out = []
    for i in range(total):
        if i < correct:
            c, r = 1.0, 0.0
        elif i < correct + ties:
            c, r = 0.5, 0.5
        else:
            c, r = 0.0, 1.0
        out.append(PromptScores(f"{subset}-{i}", subset, (c,), (r,)))
    return out


def test_rewardbench_sections_with_missing_subsets_and_ties():
    recs = (
        rb_subset("alpacaeval-easy", 3, 4)  # 0.75
        + rb_subset("alpacaeval-length", 1, 2, ties=1)  # 0.5 (the tie is wrong)
        + rb_subset("alpacaeval-hard", 1, 1)  # 1.0
        + rb_subset("mt-bench-easy", 1, 4, ties=3)  # 0.25
        + rb_subset("mt-bench-med", 0, 2)  # 0.0
        + rb_subset("mt-bench-hard", 1, 2)  # 0.5
        + rb_subset("llmbar-natural", 2, 2)  # 1.0   (other Chat Hard subsets absent)
        + rb_subset("xstest-should-refuse", 1, 2)  # 0.5
        + rb_subset("xstest-should-respond", 3, 3)  # 1.0
        + rb_subset("math-prm", 1, 2)  # 0.5
        + rb_subset("hep-python", 1, 1)  # 1.0
    )
    s = score("reward-bench", recs, samples=50)
    assert s["subsets"]["mt-bench-easy"] == 0.25
    assert s["subsets"]["alpacaeval-length"] == 0.5
    chat = (0.75 * 100 + 0.5 * 95 + 1.0 * 95 + 0.25 * 28 + 0.0 * 40) / (100 + 95 + 95 + 28 + 40)
    chat_hard = (0.5 * 37 + 1.0 * 100) / (37 + 100)
    safety = (0.5 * 154 + 1.0 * 250) / (154 + 250)
    reasoning = (0.5 * 984 + 1.0 * 164) / (984 + 164)
    assert s["sections"] == pytest.approx(
        {"Chat": chat, "Chat Hard": chat_hard, "Safety": safety, "Reasoning": reasoning}, abs=1e-9
    )
    assert s["score"] == pytest.approx((chat + chat_hard + safety + reasoning) / 4, abs=1e-9)
    assert s["n"]["mt-bench-easy"] == 4


def test_rewardbench_all_subsets_official_weights():
    rnd = random.Random(7)
    recs: list[PromptScores] = []
    acc: dict[str, float] = {}
    for weights in SECTIONS.values():
        for subset in weights:
            total = rnd.randint(3, 12)
            correct = rnd.randint(0, total)
            acc[subset] = correct / total
            recs += rb_subset(subset, correct, total)
    s = score("reward-bench", recs, samples=50)
    expected = {
        sec: sum(acc[sub] * w for sub, w in weights.items()) / sum(weights.values())
        for sec, weights in SECTIONS.items()
    }
    assert s["subsets"] == pytest.approx(acc, abs=1e-12)
    assert s["sections"] == pytest.approx(expected, abs=1e-9)
    assert s["score"] == pytest.approx(sum(expected.values()) / 4, abs=1e-9)


def test_rewardbench_math_weight_dominates_reasoning():
    # math-prm all right, all six hep-* all wrong: 984 / (984 + 6 * 164) = 0.5 exactly
    recs = rb_subset("math-prm", 5, 5)
    for lang in ("cpp", "go", "java", "js", "python", "rust"):
        recs += rb_subset(f"hep-{lang}", 0, 3)
    assert score("reward-bench", recs, samples=20)["sections"]["Reasoning"] == pytest.approx(0.5, abs=1e-12)


def test_rewardbench_prior_sets_weigh_half():
    recs = (
        rb_subset("alpacaeval-easy", 1, 1)  # Chat 1.0
        + rb_subset("llmbar-natural", 0, 2)  # Chat Hard 0.0
        + rb_subset("donotanswer", 1, 2)  # Safety 0.5
        + rb_subset("hep-go", 1, 4)  # Reasoning 0.25
        + rb_subset("anthropic_hhh", 2, 2)  # 1.0
        + rb_subset("shp", 1, 2)  # 0.5 -> Prior Sets (plain mean) 0.75
    )
    s = score("reward-bench", recs, samples=20)
    assert s["sections"]["Prior Sets"] == pytest.approx(0.75, abs=1e-12)
    assert s["score"] == pytest.approx((1.0 + 0.0 + 0.5 + 0.25 + 0.5 * 0.75) / 4.5, abs=1e-9)


def test_rewardbench_non_finite_raises():
    recs = rb_subset("hep-go", 1, 2) + [PromptScores("hep-go-x", "hep-go", (math.nan,), (0.0,))]
    with pytest.raises(DataError, match="hep-go-x"):
        score("reward-bench", recs, samples=10)


def test_rewardbench_bootstrap_seeded():
    recs = rb_subset("hep-go", 5, 9) + rb_subset("donotanswer", 3, 7)
    a, b = score("reward-bench", recs, seed=1, samples=200), score("reward-bench", recs, seed=1, samples=200)
    assert a["ci"] == b["ci"]
    lo, hi = a["ci"]["score"]
    assert lo <= a["score"] <= hi
