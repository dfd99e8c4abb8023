"""Corrected pass rate, pass@k / pass^k and multi-rater agreement, checked against independent
implementations (statsmodels, the krippendorff package, brute-force enumeration) and simulation."""

import math
from itertools import combinations

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa as sm_fleiss

from judgekit.stats.pass_rates import corrected_pass_rate, pass_at_k, pass_hat_k, suite_pass_k
from judgekit.stats.raters import fleiss_kappa, item_stability, krippendorff_alpha


@settings(max_examples=100, deadline=None)
@given(
    st.integers(2, 5).flatmap(
        lambda m: st.lists(
            st.lists(st.sampled_from("abc"), min_size=m, max_size=m), min_size=2, max_size=30
        )
    )
)
def test_fleiss_matches_statsmodels(rows):
    table, _ = aggregate_raters(np.array(rows))
    theirs = sm_fleiss(table)
    ours = fleiss_kappa(rows)
    assert (math.isnan(ours) and math.isnan(theirs)) or ours == pytest.approx(theirs, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.lists(st.one_of(st.none(), st.sampled_from([0, 1, 2])), min_size=3, max_size=3),
        min_size=3,
        max_size=30,
    )
)
def test_krippendorff_matches_the_package(rows):
    # raters x items
    data = np.array([[np.nan if x is None else x for x in row] for row in rows], dtype=float).T
    pairable = sum(1 for row in rows if sum(x is not None for x in row) >= 2)
    values = {x for row in rows for x in row if x is not None}
    if pairable == 0 or len(values) < 2:
        return  # the package raises where alpha is undefined; ours returns NaN
    with np.errstate(all="ignore"):
        theirs = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    ours = krippendorff_alpha(rows)
    assert (math.isnan(ours) and math.isnan(theirs)) or ours == pytest.approx(theirs, abs=1e-9)


def brute_force(n, c, k):
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(combinations(outcomes, k))
    return (
        sum(any(s) for s in subsets) / len(subsets),
        sum(all(s) for s in subsets) / len(subsets),
    )


@pytest.mark.parametrize(
    "n, c, k", [(5, 0, 1), (5, 2, 2), (6, 3, 3), (8, 7, 4), (4, 4, 4), (10, 1, 5)]
)
def test_pass_at_k_and_pass_hat_k_are_the_subset_averages(n, c, k):
    assert (pass_at_k(n, c, k), pass_hat_k(n, c, k)) == pytest.approx(brute_force(n, c, k))
    with pytest.raises(ValueError):
        pass_at_k(n, c, n + 1)


def test_suite_pass_k_averages_tasks():
    result = suite_pass_k([(4, 4), (4, 0), (4, 2)], k=2)
    assert result["pass@k"] == pytest.approx((1 + 0 + 5 / 6) / 3)
    assert result["pass^k"] == pytest.approx((1 + 0 + 1 / 6) / 3)
    assert all(math.isnan(v) for v in suite_pass_k([], 2).values())


def test_uninformative_judge_is_not_corrected():
    r = corrected_pass_rate(60, 100, tpr=(50, 100), tnr=(50, 100))
    assert not r.identifiable and math.isnan(r.corrected) and "no information" in r.warning
    assert r.raw == 0.6 and r.raw_interval[0] < 0.6 < r.raw_interval[1]
    weak = corrected_pass_rate(60, 100, tpr=(60, 100), tnr=(55, 100))
    assert weak.identifiable and "unstable" in weak.warning


def test_labelled_random_sample_narrows_the_interval():
    alone = corrected_pass_rate(138, 200, tpr=(126, 140), tnr=(48, 60))
    with_labels = corrected_pass_rate(138, 200, tpr=(126, 140), tnr=(48, 60), labelled=(140, 200))
    assert with_labels.interval[1] - with_labels.interval[0] < alone.interval[1] - alone.interval[0]
    with pytest.raises(ValueError):
        corrected_pass_rate(5, 4, tpr=(1, 2), tnr=(1, 2))


def test_coverage_smoke_simulation():
    """A small, seeded version of the benchmark (benchmarks/statistics.py runs 2,000 suites)."""
    rng = np.random.default_rng(0)
    covered = 0
    for _ in range(300):
        tp, tn = rng.binomial(100, 0.9), rng.binomial(100, 0.8)
        truth = rng.random(200) < 0.7
        passed = int(np.where(truth, rng.random(200) < 0.9, rng.random(200) >= 0.8).sum())
        low, high = corrected_pass_rate(passed, 200, (tp, 100), (tn, 100)).interval
        covered += low <= 0.7 <= high
    assert covered / 300 > 0.92


def test_item_stability():
    assert item_stability([[True, True, False], [True, None, True], [None, None]])[:2] == [
        2 / 3,
        1.0,
    ]
