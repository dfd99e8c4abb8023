"""Estimates from examples drawn by the judge's verdict (judgekit.stats.design): weights, the
weighted figures and their intervals, allocation, and why plain counting is wrong."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from judgekit.stats.allocation import Stratum, allocate
from judgekit.stats.design import design_calibration, weighted_cells, weights
from judgekit.stats.drawn import DesignError, Drawn
from judgekit.stats.metrics import calibration

SIZES = (("fail", 100), ("pass", 900))


def drawn(stratum, sizes=SIZES, pool="p"):
    return Drawn(pool, stratum, sizes)


def test_weights_scale_each_stratum_to_its_share_of_the_pool_and_leave_other_examples_at_one():
    d = [drawn("fail")] * 5 + [drawn("pass")] * 5 + [None] * 3
    w = weights(d)
    # 10 labelled from the pool; fail is 10% of it
    assert w[:5] == [pytest.approx(10 * 100 / 1000 / 5)] * 5
    assert w[5:10] == [pytest.approx(10 * 900 / 1000 / 5)] * 5
    assert w[10:] == [1.0] * 3
    assert sum(w) == pytest.approx(13)  # the pool's examples count as many as were labelled


def test_a_stratum_with_replies_but_no_labelled_example_is_an_error_naming_it():
    with pytest.raises(DesignError, match="stratum 'pass'"):
        weights([drawn("fail"), drawn("fail")])
    with pytest.raises(DesignError, match="different stratum sizes"):
        weights([drawn("fail"), drawn("pass", (("fail", 100), ("pass", 800)))])
    with pytest.raises(DesignError, match="not among its sizes"):
        weights([drawn("maybe")])
    with pytest.raises(DesignError, match="which holds 1"):
        weights(
            [drawn("fail", (("fail", 1), ("pass", 5)))] * 2
            + [drawn("pass", (("fail", 1), ("pass", 5)))]
        )


def test_a_set_drawn_at_the_pools_own_proportions_estimates_as_plain_counting_does():
    labels = [True, False] * 5 + [True] * 40 + [False] * 5
    verdicts = [False] * 10 + [True] * 45
    d = [drawn("fail")] * 10 + [drawn("pass", (("fail", 100), ("pass", 450)))] * 45
    d = [Drawn("p", x.stratum, (("fail", 100), ("pass", 450))) for x in d]
    plain, weighted = calibration(labels, verdicts), design_calibration(labels, verdicts, d)
    for name in ("cohen_kappa", "accuracy"):
        assert weighted.metrics[name] == pytest.approx(plain.metrics[name])
    # TPR and TNR are the pool's own, without a ratio's bias (judgekit.stats.unbiased): near the
    # plain shares, not them
    for name in ("tpr", "tnr"):
        assert weighted.metrics[name] == pytest.approx(plain.metrics[name], abs=0.01)
        assert weighted.metrics[name] != pytest.approx(plain.metrics[name], abs=1e-6)
    assert weighted.confusion == plain.confusion  # what was labelled, counted


def test_horvitz_thompson_cells_are_unbiased_over_every_sample_of_a_small_pool():
    # A pool of 6 fails and 6 passes of the judge; labels known. Every sample of 2 + 3 is drawn
    # once: the mean of the weighted cells equals the pool's cells scaled to 5 examples.
    fails = [(False, False)] * 4 + [(True, False)] * 2  # (label, verdict)
    passes = [(True, True)] * 4 + [(False, True)] * 2
    sizes = (("fail", 6), ("pass", 6))
    sums = np.zeros(4)
    count = 0
    for f in itertools.combinations(range(6), 2):
        for p in itertools.combinations(range(6), 3):
            chosen = [fails[i] for i in f] + [passes[i] for i in p]
            d = [Drawn("p", "fail", sizes)] * 2 + [Drawn("p", "pass", sizes)] * 3
            sums += weighted_cells([c[0] for c in chosen], [c[1] for c in chosen], weights(d))
            count += 1
    pool_cells = np.array([4, 2, 4, 2]) * 5 / 12  # tp, fp, tn, fn of the pool, as 5 examples
    assert sums / count == pytest.approx(pool_cells)


def test_counting_examples_drawn_by_verdict_plainly_overstates_tnr_and_weighting_does_not():
    rng = np.random.default_rng(7)
    good = rng.random(4000) >= 0.2
    verdict = np.where(good, rng.random(4000) < 0.9, rng.random(4000) >= 0.7)  # TNR 0.7
    true_tnr = (~good & ~verdict).sum() / (~good).sum()
    plain, weighted = [], []
    fail_idx, pass_idx = np.flatnonzero(~verdict), np.flatnonzero(verdict)
    sizes = (("fail", int(fail_idx.size)), ("pass", int(pass_idx.size)))
    for _ in range(200):  # far more of the judge's fails than its share: where the bad replies are
        chosen = np.concatenate(
            [rng.choice(fail_idx, 100, replace=False), rng.choice(pass_idx, 150, replace=False)]
        )
        d = [Drawn("p", "fail" if not verdict[i] else "pass", sizes) for i in chosen]
        plain.append(calibration(list(good[chosen]), list(verdict[chosen])).metrics["tnr"])
        weighted.append(
            design_calibration(list(good[chosen]), list(verdict[chosen]), d).metrics["tnr"]
        )
    assert np.mean(plain) - true_tnr > 0.1  # the trap
    assert abs(np.mean(weighted) - true_tnr) < 0.015


def test_intervals_hold_the_estimate_and_a_rate_without_examples_has_none():
    labels, verdicts = [True, True, False, True], [True, True, True, False]
    d = [drawn("pass")] * 3 + [drawn("fail")]
    found = design_calibration(labels, verdicts, d)
    for name in ("tpr", "tnr", "cohen_kappa"):
        low, high = found.intervals[name]
        if not math.isnan(found.metrics[name]):
            assert low <= found.metrics[name] <= high
    only_good = design_calibration([True, True], [True, False], [drawn("pass"), drawn("fail")])
    assert all(math.isnan(x) for x in only_good.intervals["tnr"])
    # seeded: the gate draws the same
    assert found.intervals == design_calibration(labels, verdicts, d).intervals


def test_allocation_sees_every_stratum_then_goes_where_the_rate_varies_most():
    # TNR: the bad replies the judge passes hide among its many passes; its
    # fails are nearly all bad.
    strata = {"pass": Stratum(900, 0), "fail": Stratum(100, 0)}
    first = allocate(strata, 20, "tnr", 0.8)
    assert first["fail"] >= 2 and first["pass"] >= 2 and sum(first.values()) == 20
    assert first["pass"] > first["fail"]
    later = allocate(
        {"pass": Stratum(900, 10, (9, 1, 0, 0)), "fail": Stratum(100, 10, (0, 0, 9, 1))},
        10,
        "tnr",
        0.8,
    )
    assert sum(later.values()) == 10
    # spent
    assert allocate({"pass": Stratum(3, 2), "fail": Stratum(2, 2)}, 10, "tpr") == {
        "pass": 1,
        "fail": 0,
    }
