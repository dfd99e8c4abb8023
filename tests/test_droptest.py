"""The drop test of `judgekit monitor`: the exact p-value's bound against a brute-force computation
(its false-alarm rate through `watch` is in tests/test_monitor.py)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import beta, binom

from judgekit.stats.droptest import NUISANCE, _box, _Exact, _exact, drop_test, score_z


def _brute_force(n1, n0, x0, drop, alpha, z):
    """The exact p-value on a fine grid of baseline rates, every outcome enumerated."""
    spent = alpha * NUISANCE
    low = 0.0 if x0 == 0 else beta.ppf(spent / 2, x0, n0 - x0 + 1)
    high = 1.0 if x0 == n0 else beta.ppf(1 - spent / 2, x0 + 1, n0 - x0)
    hull = score_z(np.arange(n1 + 1)[:, None], n1, np.arange(n0 + 1)[None, :], n0, drop)
    hull = np.minimum.accumulate(np.minimum.accumulate(hull, axis=1)[::-1], axis=0)[::-1]
    extreme = hull <= z
    return spent + max(
        binom.pmf(np.arange(n1 + 1), n1, max(0.0, p - drop))
        @ extreme
        @ binom.pmf(np.arange(n0 + 1), n0, p)
        for p in np.linspace(low, high, 300)
    )


def test_the_exact_p_value_is_never_below_the_brute_force_one():
    rng = np.random.default_rng(3)
    checked = 0
    while checked < 25:
        n1 = int(rng.integers(20, 60))
        n0, drop = int(rng.integers(n1, 400)), float(rng.choice([0.0, 0.05, 0.1]))
        x0, x1 = int(rng.integers(0, n0 + 1)), int(rng.integers(0, n1 + 1))
        z = float(score_z(x1, n1, x0, n0, drop))
        if not z < 0:
            continue
        mine = _Exact(n1, n0, x0, drop, 0.01).p_value(z)
        assert mine >= _brute_force(n1, n0, x0, drop, 0.01, z) - 1e-12
        checked += 1


def test_large_windows_are_scored_in_chunks_with_the_same_answer(monkeypatch):
    import judgekit.stats.droptest as droptest

    whole = _Exact(200, 1400, 1260, 0.05, 0.01)
    monkeypatch.setattr(droptest, "_CHUNK", 1000)
    chunked = _Exact(200, 1400, 1260, 0.05, 0.01)
    assert whole.hull is not None and chunked.hull is None
    for z in (-1.5, -2.3, -3.0):
        assert (whole._first_extreme(z) == chunked._first_extreme(z)).all()
        assert whole.p_value(z) == chunked.p_value(z)


def test_the_exact_test_runs_only_where_the_score_test_is_near_alpha():
    # 0.95 against 0.90: far from a drop
    p, alert = drop_test(190, 200, 1260, 1400, 0.05, alpha=0.01)
    assert p > 0.5 and not alert
    p, alert = drop_test(150, 200, 1260, 1400, 0.05, alpha=0.01)
    # exact: at least what the baseline's interval spent
    assert alert and 0.01 * NUISANCE < p < 0.001


def test_the_box_holds_no_outcome_as_extreme_and_bounds_the_brute_force_p_value():
    rng = np.random.default_rng(11)
    checked = 0
    while checked < 12:
        n1 = int(rng.integers(100, 300))
        n0, drop = int(rng.integers(n1, 1500)), float(rng.choice([0.0, 0.05, 0.1]))
        x0 = int(rng.integers(n0 // 4, n0 + 1))
        x1 = int(rng.integers(0, max(1, int(n1 * (x0 / n0 - drop - 0.15)))))
        z = float(score_z(x1, n1, x0, n0, drop))
        box = _box(n1, n0, x0, drop, 0.01, z) if z < 0 else None
        if box is None:
            continue
        a1, b0, bound = box
        hull = score_z(np.arange(n1 + 1)[:, None], n1, np.arange(n0 + 1)[None, :], n0, drop)
        hull = np.minimum.accumulate(np.minimum.accumulate(hull, axis=1)[::-1], axis=0)[::-1]
        inside = hull[a1:, : b0 + 1]
        assert inside.size and (inside > z).all(), (n1, n0, x0, x1, drop)
        assert bound >= _brute_force(n1, n0, x0, drop, 0.01, z) - 1e-12
        checked += 1


def test_a_steep_drop_on_a_large_window_is_decided_without_the_grid():
    _exact.cache_clear()
    p, alert = drop_test(176_000, 220_000, 1_782_000, 1_980_000, 0.05, alpha=0.01)
    assert alert and 0.01 * NUISANCE <= p <= 0.01
    assert _exact.cache_info().misses == 0
    # Near the decision the box does not decide, and the grid does.
    p, alert = drop_test(230, 300, 2_700, 3_000, 0.05, alpha=0.01)
    assert alert and _exact.cache_info().misses == 1


@pytest.mark.parametrize(
    "case",
    [
        (
            0,
            300,
            0,
            1000,
            0.05,
            0.1,
        ),  # both rates 0: a positive statistic, asked at alpha 0.1 (10 x alpha > 0.5)
        (3, 300, 10, 1000, 0.05, 0.2),
        (0, 30, 61, 300, 0.2, 0.01),  # a window of none against a baseline just above max_drop
        (0, 30, 65, 300, 0.2, 0.05),
    ],
)
def test_no_alert_where_the_exact_p_value_is_above_alpha(case):
    x1, n1, x0, n0, drop, alpha = case
    z = float(score_z(x1, n1, x0, n0, drop))
    p, alert = drop_test(x1, n1, x0, n0, drop, alpha)
    assert np.isfinite(z) and _brute_force(n1, n0, x0, drop, alpha, z) > alpha  # the exact p-value
    assert not alert and p > alpha
