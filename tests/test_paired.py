"""Paired statistics (judgekit.stats.paired): McNemar against scipy, Holm against a hand-worked
example and statsmodels, the paired differences against judgekit's own metrics, and the number
of examples that would separate two candidates against an exact sum and a simulation.
benchmarks/paired.py measures error rates, coverage and power at scale."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.stats import binom, binomtest

from judgekit.stats.metrics import confusion, kappa_from_counts, ratio
from judgekit.stats.paired import (
    against_best,
    binomial_sf,
    discordant,
    examples_to_separate,
    holm,
    mcnemar_exact,
    mcnemar_many,
    paired_deltas,
    right,
)

PAIRS = [
    (0, 0),
    (0, 1),
    (1, 0),
    (0, 7),
    (7, 7),
    (5, 4),
    (15, 2),
    (2, 15),
    (1, 30),
    (40, 39),
    (200, 150),
    (3000, 2900),
    (0, 60),
    (17, 18),
    (1000, 999),
    (2, 1998),
    (700, 1300),
]  # to 2000 in whole numbers


@pytest.mark.parametrize("n", [0, 1, 7, 100, 1999, 2000, 2001, 5000])
@pytest.mark.parametrize("p", [1e-6, 0.001, 0.02, 0.3, 0.5, 0.77, 0.999])
def test_binomial_upper_tail_is_scipys(n, p):
    """drift's one-sided tests without scipy: every k, each tail side, to 1e-12
    (relative when tiny)."""
    for k in sorted(
        {
            *range(-1, min(n, 60) + 2),
            *range(max(0, n - 60), n + 2),
            n // 2,
            int(n * p),
            int(n * p) + 1,
        }
    ):
        expected = float(binom.sf(k - 1, n, p))
        assert binomial_sf(k, n, p) == pytest.approx(expected, abs=1e-12, rel=1e-9), (k, n, p)


@pytest.mark.parametrize("b, c", PAIRS)
def test_mcnemar_exact_is_scipys_binomial_test(b, c):
    expected = 1.0 if b + c == 0 else binomtest(b, b + c, 0.5).pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected, abs=1e-12, rel=1e-9)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 300), st.integers(0, 300)), min_size=1, max_size=30))
def test_mcnemar_many_is_scipys_binomial_test_on_every_pair(pairs):
    b, c = [x for x, _ in pairs], [y for _, y in pairs]
    expected = [1.0 if x + y == 0 else binomtest(x, x + y, 0.5).pvalue for x, y in pairs]
    np.testing.assert_allclose(mcnemar_many(b, c), expected, rtol=0, atol=1e-12)


def test_mcnemar_many_on_the_fixed_pairs():
    b, c = zip(*PAIRS, strict=True)
    expected = [1.0 if x + y == 0 else binomtest(x, x + y, 0.5).pvalue for x, y in PAIRS]
    np.testing.assert_allclose(mcnemar_many(b, c), expected, rtol=0, atol=1e-12)


def test_holm_by_hand():
    # sorted: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> 0.06 (monotone)
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6, 0.001]) == pytest.approx([1.0, 1.0, 0.003])  # capped at 1
    assert holm([0.02]) == [0.02] and holm([]) == []


def test_holm_is_statsmodels_holm():
    multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests
    rng = np.random.default_rng(3)
    for size in (2, 5, 20, 64):
        p = list(rng.random(size) ** 3)
        p[0] = p[-1]  # a tie
        assert holm(p) == pytest.approx(list(multipletests(p, method="holm")[1]), abs=1e-12)


def test_against_best_is_bonferroni_over_every_pair():
    b, c = [10, 3, 20], [1, 3, 2]
    raw = mcnemar_many(b, c)
    np.testing.assert_allclose(against_best(b, c, 4), np.minimum(1.0, raw * 6))
    # never bolder than Holm over these three
    assert (against_best(b, c, 4) >= np.array(holm(list(raw)))).all()
    with pytest.raises(ValueError, match="4 comparisons"):
        against_best([1, 2, 3, 4], [0, 0, 0, 0], 4)


def test_an_abstention_is_not_right():
    labels = [True, True, False, False, True, False]
    a = [True, None, False, True, None, None]
    b = [None, True, False, False, False, None]
    assert right(labels, a).tolist() == [True, False, True, False, False, False]
    # a only on 0; b only on 1 and 3; 4 and 5 wrong or abstained by both
    assert discordant(labels, a, b) == (
        1,
        2,
    )
    assert discordant(labels, b, a) == (2, 1)
    with pytest.raises(ValueError, match="6 labels but 5 verdicts"):
        discordant(labels, a[:5], b)


def _judged(rng, n, tpr, tnr, abstain):
    labels = rng.random(n) < 0.4
    ok = rng.random(n) < np.where(labels, tpr, tnr)
    verdicts = [None if rng.random() < abstain else bool(x) for x in np.where(ok, labels, ~labels)]
    return [bool(x) for x in labels], verdicts


def _figures(labels, verdicts):
    c, _ = confusion(labels, verdicts)
    return {
        "tpr": ratio(c.tp, c.tp + c.fn),
        "tnr": ratio(c.tn, c.tn + c.fp),
        "cohen_kappa": kappa_from_counts(c.tp, c.fp, c.tn, c.fn),
    }


@pytest.mark.parametrize("n, abstain", [(40, 0.0), (150, 0.1), (1000, 0.02)])
def test_paired_deltas_are_the_difference_of_the_calibration_figures(n, abstain):
    rng = np.random.default_rng(n)
    labels, a = _judged(rng, n, 0.9, 0.7, abstain)
    _, b = _judged(np.random.default_rng(n + 1), n, 0.8, 0.85, abstain)
    deltas = paired_deltas(labels, a, b, seed=7)
    first, second = _figures(labels, a), _figures(labels, b)
    for name, (delta, low, high) in deltas.items():
        assert delta == pytest.approx(second[name] - first[name], abs=1e-12)
        assert low <= delta <= high and high - low > 0.01
    assert paired_deltas(labels, a, b, seed=7) == deltas  # seeded
    other = paired_deltas(labels, a, b, seed=8)
    assert other != deltas and all(other[k][0] == deltas[k][0] for k in deltas)
    # beyond the draws: extrapolated
    wider = paired_deltas(labels, a, b, seed=7, confidence=1 - 0.05 / 2000)
    for name in deltas:
        assert wider[name][1] < deltas[name][1] and wider[name][2] > deltas[name][2]
        assert math.isfinite(wider[name][1]) and math.isfinite(wider[name][2])


def test_a_tail_beyond_the_draws_is_extrapolated_like_a_normal_one():
    labels, a = _judged(np.random.default_rng(4), 2000, 0.85, 0.8, 0.0)
    _, b = _judged(np.random.default_rng(5), 2000, 0.8, 0.85, 0.0)
    usual, deep = paired_deltas(labels, a, b), paired_deltas(labels, a, b, confidence=1 - 1e-6)
    assert paired_deltas(labels, a, b, confidence=1 - 1e-4)["tpr"][1] > deep["tpr"][1]
    # near normal at 2,000 examples
    stretch = NormalDist().inv_cdf(5e-7) / NormalDist().inv_cdf(0.025)
    for name in usual:
        assert (deep[name][2] - deep[name][1]) / (usual[name][2] - usual[name][1]) == pytest.approx(
            stretch, rel=0.1
        )


def test_two_perfect_candidates_still_get_an_honest_interval():
    """The prior keeps a difference of no errors against no errors from collapsing to a point."""
    labels = [True] * 30 + [False] * 30
    deltas = paired_deltas(labels, labels, labels)
    for name, (delta, low, high) in deltas.items():
        assert delta == 0 and low < -0.02 and high > 0.02, name


def test_swapping_the_candidates_turns_the_sign():
    labels, a = _judged(np.random.default_rng(1), 120, 0.9, 0.7, 0.05)
    _, b = _judged(np.random.default_rng(2), 120, 0.7, 0.9, 0.05)
    forward, backward = paired_deltas(labels, a, b), paired_deltas(labels, b, a)
    for name in forward:
        assert forward[name][0] == pytest.approx(-backward[name][0])
        assert forward[name][1] == pytest.approx(-backward[name][2], abs=0.05)


def test_an_undefined_figure_is_nan():
    labels = [True, True, False, False, False]
    a = [None, None, True, False, False]  # decides no known-good example: no TPR
    b = [True, False, True, False, False]
    deltas = paired_deltas(labels, a, b)
    assert all(math.isnan(x) for x in deltas["tpr"])
    assert deltas["tnr"][0] == 0.0 and all(math.isfinite(x) for x in deltas["tnr"])


def test_examples_to_separate_at_the_edges():
    assert mcnemar_exact(30, 10) < 0.05 and examples_to_separate(30, 10, 200, 0.05) == 0
    assert (
        examples_to_separate(7, 7, 100, 0.05) is None
        and examples_to_separate(0, 0, 100, 0.05) is None
    )
    # about 3.2 million more would be needed
    assert examples_to_separate(50, 49, 1000, 0.05) is None
    assert examples_to_separate(12, 6, 100, 0.05, limit=100) is None
    with pytest.raises(ValueError, match="do not fit"):
        examples_to_separate(60, 50, 100, 0.05)


def _exact_power(b, c, n, total, alpha):
    """Summed over every (B, D - B) of `total` examples, with the test itself deciding each."""
    d = np.repeat(np.arange(total + 1), np.arange(total + 1) + 1)
    k = np.concatenate([np.arange(x + 1) for x in range(total + 1)])
    weight = binom.pmf(d, total, (b + c) / n) * binom.pmf(k, d, b / (b + c))
    return float(weight @ (mcnemar_many(k, d - k) < alpha))


# a tiny alpha: the region found upwards
@pytest.mark.parametrize(
    "b, c, n, alpha",
    [(12, 6, 100, 0.05), (2, 9, 100, 0.01), (3, 0, 60, 0.05 / 6), (3, 0, 60, 1e-8)],
)
def test_examples_to_separate_is_the_first_number_with_the_power(b, c, n, alpha):
    more = examples_to_separate(b, c, n, alpha)
    assert more is not None and more > 0
    assert (
        _exact_power(b, c, n, n + more, alpha) >= 0.8 > _exact_power(b, c, n, n + more - 1, alpha)
    )
    rng = np.random.default_rng(0)
    for total, at_least in ((n + more, True), (n + more // 2, False)):
        counts = rng.multinomial(total, [b / n, c / n, 1 - (b + c) / n], size=4000)
        rejected = float(np.mean(mcnemar_many(counts[:, 0], counts[:, 1]) < alpha))
        assert (rejected >= 0.8 - 0.02) if at_least else (rejected < 0.8 - 0.02)
