"""A pool's TPR and TNR from labels drawn by the judge's verdict in rounds
(judgekit.stats.unbiased): the series is exact, and the estimate's expectation over every possible
draw, enumerated with its hypergeometric probability, is the pool's own rate, in one round and in
two where the second's sizes depend on what the first found; the weighted rates judgekit reported
before were not."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from fractions import Fraction
from math import comb

import pytest

from judgekit.stats.design import (
    DesignError,
    Drawn,
    by_pool,
    design_calibration,
    weighted_cells,
    weights,
)
from judgekit.stats.unbiased import LEAST, StratumDraws, rates, series


def test_the_newton_series_of_the_ratio_is_exact():
    for total in (3, 7, 20):
        for y in range(6):
            for w in range(min(total, 5) + 1):
                if total - w + y == 0:
                    continue
                e_y = [Fraction(comb(y, j)) for j in range(y + 1)]
                e_w = [Fraction(comb(w, k)) for k in range(w + 1)]
                assert series(e_y, e_w, total) == Fraction(y, total - w + y)


def _hypergeometric(size: int, counted: int, n: int, b: int) -> Fraction:
    return Fraction(comb(counted, b) * comb(size - counted, n - b), comb(size, n))


def _expectations(pool, first, second, plan=None):
    """E[TPR], E[TNR] of the estimate and E[TNR] of the weighted cells' ratio, over every draw, and
    the estimated TNR's standard deviation: `pool` = (pass stratum size, its false passes, fail
    stratum size, its false fails); `first` the first round's labels in each;
    `second(b_pass, b_fail)` the second round's, chosen from what the first found (None: one
    round); `plan` the rounds' planned sizes (None: equal weights)."""
    n_p, y, n_f, w = pool
    first_p, first_f = first
    tpr = tnr = weighted = square = Fraction(0)
    for b1p in range(min(y, first_p) + 1):
        for b1f in range(min(w, first_f) + 1):
            p1 = _hypergeometric(n_p, y, first_p, b1p) * _hypergeometric(n_f, w, first_f, b1f)
            n2p, n2f = second(b1p, b1f) if second else (0, 0)
            for b2p in range(min(y - b1p, n2p) + 1):
                for b2f in range(min(w - b1f, n2f) + 1):
                    p = p1
                    p *= _hypergeometric(n_p - first_p, y - b1p, n2p, b2p) if n2p else 1
                    p *= _hypergeometric(n_f - first_f, w - b1f, n2f, b2f) if n2f else 1
                    if not p:
                        continue
                    rounds_p = ((first_p, b1p),) + (((n2p, b2p),) if second else ())
                    rounds_f = ((first_f, b1f),) + (((n2f, b2f),) if second else ())
                    got = rates(
                        [StratumDraws(n_p, True, rounds_p), StratumDraws(n_f, False, rounds_f)],
                        plan if second else None,
                    )
                    tpr += p * Fraction(got[0])
                    tnr += p * Fraction(got[1])
                    square += p * Fraction(got[1]) ** 2
                    fp = Fraction(n_p * (b1p + b2p), first_p + n2p)
                    tn = Fraction(n_f * (first_f + n2f - b1f - b2f), first_f + n2f)
                    weighted += p * tn / (tn + fp)
    return float(tpr), float(tnr), float(weighted), math.sqrt(square - tnr**2)


@pytest.mark.parametrize(
    ("second", "plan"),
    [
        (None, None),
        (lambda bp, bf: (LEAST if bp == 0 else 7, LEAST + bf % 2), None),
        (lambda bp, bf: (LEAST if bp == 0 else 7, LEAST + bf % 2), (11, 9)),
        (lambda bp, bf: (9 if bp == 0 else LEAST, LEAST), (11, 4)),
    ],
    ids=[
        "one round",
        "two rounds, the second chosen from the first",
        "weighed by the plan",
        "a smaller second round, weighed by the plan",
    ],
)
def test_the_estimate_is_the_pool_s_own_rate_over_every_draw(second, plan):
    n_p, y, n_f, w = 60, 5, 16, 3  # the judge passes 60 replies, 5 of them bad; fails 16, 3 good
    tpr, tnr, weighted, _ = _expectations((n_p, y, n_f, w), (6, 5), second, plan)
    assert tpr == pytest.approx((n_p - y) / (n_p - y + w), abs=1e-9)
    assert tnr == pytest.approx((n_f - w) / (n_f - w + y), abs=1e-9)
    if plan is None:  # what judgekit reported before: the weighted cells' ratio, a point too high
        assert weighted - (n_f - w) / (n_f - w + y) > 0.01


def _pool_draw(rounds):
    """A set drawn from one pool: (stratum, round, label) per example, the judge passing the
    'pass' stratum (500 replies) and failing the 'fail' one (100)."""
    sizes = (("fail", 100), ("pass", 500))
    drawn, labels, verdicts = [], [], []
    for stratum, round_, label in rounds:
        drawn.append(Drawn("p", stratum, sizes, None, round_))
        labels.append(label)
        verdicts.append(stratum == "pass")
    return labels, verdicts, drawn


def test_a_pool_drawn_in_one_round_is_estimated_so_and_other_draws_keep_the_weighted_ratio():
    rows = (
        [("pass", 1, True)] * 9
        + [("pass", 1, False)]
        + [("fail", 1, False)] * 8
        + [("fail", 1, True)] * 2
    )
    labels, verdicts, drawn = _pool_draw(rows)
    found = design_calibration(labels, verdicts, drawn).metrics
    expected = rates([StratumDraws(500, True, ((10, 1),)), StratumDraws(100, False, ((10, 2),))])
    assert (found["tpr"], found["tnr"]) == pytest.approx(expected)
    tp, fp, tn, fn = weighted_cells(labels, verdicts, weights(drawn))
    assert found["tnr"] != pytest.approx(tn / (tn + fp), abs=0.01)  # not the weighted ratio

    def weighted(labels, verdicts, drawn):
        tp, fp, tn, fn = weighted_cells(labels, verdicts, weights(drawn))
        return tp / (tp + fn), tn / (tn + fp)

    # A second round: the estimate over rounds swings with a small one (its weights would have to
    # be fixed in advance), so the weighted ratio stands, as it does for a judge other than the one
    # that drew the pool, which cuts across its strata (here it fails one of the 'pass' stratum).
    later = _pool_draw(rows + [("pass", 2, True)] * 2 + [("fail", 2, False)] * 2)
    other = (labels, [False, *verdicts[1:]], drawn)
    for case in (later, other):
        got = design_calibration(*case).metrics
        assert (got["tpr"], got["tnr"]) == pytest.approx(weighted(*case))
        assert by_pool(*case)["p"].without_bias == ()  # and the report says which they are
    assert by_pool(labels, verdicts, drawn)["p"].without_bias == ("tpr", "tnr")


def _planned(rows, plan):
    """`_pool_draw`'s set, each stratum's replies at its next places, the pool's plan recorded."""
    sizes = (("fail", 100), ("pass", 500))
    places: Counter[str] = Counter()
    drawn, labels, verdicts = [], [], []
    for stratum, round_, label in rows:
        drawn.append(Drawn("p", stratum, sizes, places[stratum], round_, plan))
        places[stratum] += 1
        labels.append(label)
        verdicts.append(stratum == "pass")
    return labels, verdicts, drawn


FIRST = (
    [("pass", 1, True)] * 9
    + [("pass", 1, False)]
    + [("fail", 1, False)] * 8
    + [("fail", 1, True)] * 2
)
SECOND = (
    [("pass", 2, True)] * 14
    + [("pass", 2, False)] * 2
    + [("fail", 2, False)] * 3
    + [("fail", 2, True)]
)


def _weighted(labels, verdicts, drawn):
    tp, fp, tn, fn = weighted_cells(labels, verdicts, weights(drawn))
    return tp / (tp + fn), tn / (tn + fp)


def test_a_pool_drawn_in_the_rounds_of_its_plan_is_estimated_without_a_ratios_bias():
    case = _planned(FIRST + SECOND, (20, 20))
    found = design_calibration(*case).metrics
    expected = rates(
        [
            StratumDraws(500, True, ((10, 1), (16, 2))),
            StratumDraws(100, False, ((10, 2), (4, 1))),
        ],
        (20, 20),
    )
    assert (found["tpr"], found["tnr"]) == pytest.approx(expected)
    assert found["tnr"] != pytest.approx(_weighted(*case)[1], abs=0.005)
    assert by_pool(*case)["p"].without_bias == ("tpr", "tnr")


@pytest.mark.parametrize(
    ("rows", "plan"),
    [
        (FIRST + SECOND, (20, 30)),  # the second round short of its plan
        (FIRST + SECOND, (20,)),  # past the plan
        (FIRST + [(s, 10**6, label) for s, _, label in SECOND], (20, 20)),  # a round edited in
        (FIRST + SECOND, None),  # drawn before plans were recorded
        (FIRST + SECOND[:16] + SECOND[-1:], (20, 17)),  # a stratum's rest guessed from 1 label
    ],
    ids=["short of the plan", "past the plan", "a round of a million", "no plan", "one label"],
)
def test_rounds_off_their_plan_keep_the_weighted_ratio(rows, plan):
    case = _planned(rows, plan)
    found = design_calibration(*case).metrics
    assert (found["tpr"], found["tnr"]) == pytest.approx(_weighted(*case))
    assert by_pool(*case)["p"].without_bias == ()


def test_records_that_contradict_the_plan_or_the_places_are_refused():
    labels, verdicts, drawn = _planned(FIRST + SECOND, (20, 20))
    other = [replace(drawn[0], plan=(20, 21)), *drawn[1:]]
    with pytest.raises(DesignError, match="different plans of rounds"):
        weights(other)
    # the first pass of round 2 (place 10) moved into round 1 and the first reply of round 1 into
    # round 2: the round sizes still follow the plan, the places do not
    swapped = [replace(drawn[0], round=2), *drawn[1:20], replace(drawn[20], round=1), *drawn[21:]]
    with pytest.raises(DesignError, match="round 1 at place 1, after one of round 2 at place 0"):
        design_calibration(labels, verdicts, swapped)
