"""A pool's TPR and TNR from labels drawn by the judge's verdict in rounds
(judgekit.stats.unbiased): the series is exact, and the estimate's expectation over every possible
draw, enumerated with its hypergeometric probability, is the pool's own rate, in one round and in
two where the second's sizes depend on what the first found; the weighted rates judgekit reported
before were not."""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction
from math import comb

import pytest

from judgekit.stats.allocation import Stratum, round_allocation, verify_design
from judgekit.stats.design import by_pool, design_calibration, weighted_cells, weights
from judgekit.stats.drawn import DesignError, Drawn
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


SIZES = (("fail", 100), ("pass", 500))
# each stratum's replies in its fixed order, labelled: every 8th the judge passes is bad, every
# 4th it fails is good
ORDER = {"pass": [i % 8 != 3 for i in range(500)], "fail": [i % 4 == 1 for i in range(100)]}


def _planned(plan, rate="tnr", rounds=None):
    """A set drawn from one pool as `label --next --rounds` draws it: each round allocated by
    `round_allocation` from the rounds before it (`rounds`: that many of the plan's), each
    record with its place, round, plan and rate."""
    taken = {"pass": 0, "fail": 0}
    drawn, labels, verdicts = [], [], []
    for r, n in enumerate(plan[:rounds], start=1):
        state = {}
        for s, size in SIZES:
            done = ORDER[s][: taken[s]]
            passes = s == "pass"
            cells = (
                (sum(done), len(done) - sum(done), 0, 0)
                if passes
                else (0, 0, len(done) - sum(done), sum(done))
            )
            state[s] = Stratum(size, taken[s], cells)
        for s, k in round_allocation(state, n, rate, later=r > 1).items():
            for at in range(taken[s], taken[s] + k):
                drawn.append(Drawn("p", s, SIZES, at, r, plan, rate))
                labels.append(ORDER[s][at])
                verdicts.append(s == "pass")
            taken[s] += k
    return labels, verdicts, drawn


def _strata(drawn, labels, plan):
    """The StratumDraws of a planned draw: per stratum and round, labelled and counted."""
    out = []
    for s, size in SIZES:
        passes = s == "pass"
        rounds = tuple(
            (
                sum(1 for d in drawn if d.stratum == s and d.round == r),
                sum(
                    1
                    for d, label in zip(drawn, labels, strict=True)
                    if d.stratum == s and d.round == r and label != passes
                ),
            )
            for r in range(1, len(plan) + 1)
        )
        out.append(StratumDraws(size, passes, rounds))
    return out


def _weighted(labels, verdicts, drawn):
    tp, fp, tn, fn = weighted_cells(labels, verdicts, weights(drawn))
    return tp / (tp + fn), tn / (tn + fp)


def test_a_pool_drawn_in_the_rounds_of_its_plan_is_estimated_without_a_ratios_bias():
    labels, verdicts, drawn = case = _planned((20, 20))
    assert sum(d.stratum == "fail" for d in drawn if d.round == 2) >= LEAST
    found = design_calibration(*case).metrics
    expected = rates(_strata(drawn, labels, (20, 20)), (20, 20))
    assert (found["tpr"], found["tnr"]) == pytest.approx(expected)
    assert found["tnr"] != pytest.approx(_weighted(*case)[1], abs=0.005)
    assert by_pool(*case)["p"].without_bias == ("tpr", "tnr")


@pytest.mark.parametrize(
    "edit",
    ["short of the plan", "past the plan", "a round of a million", "no plan", "one label"],
)
def test_rounds_off_their_plan_keep_the_weighted_ratio(edit):
    labels, verdicts, drawn = _planned((20, 20))
    if edit == "short of the plan":  # the second round's last reply not labelled yet
        case = (labels[:-1], verdicts[:-1], drawn[:-1])
    elif edit == "past the plan":
        case = (labels, verdicts, [replace(d, plan=(20,)) for d in drawn])
    elif edit == "a round of a million":
        case = (labels, verdicts, [replace(d, round=10**6) if d.round == 2 else d for d in drawn])
    elif edit == "no plan":  # drawn before plans were recorded
        case = (labels, verdicts, [replace(d, plan=None, rate=None) for d in drawn])
    else:  # a later round giving a stratum 1 label: its rest guessed from it
        keep = [i for i, d in enumerate(drawn) if not (d.round == 2 and d.stratum == "fail")]
        keep += [i for i, d in enumerate(drawn) if d.round == 2 and d.stratum == "fail"][:1]
        keep.sort()
        n = len(keep) - 20
        case = (
            [labels[i] for i in keep],
            [verdicts[i] for i in keep],
            [replace(drawn[i], plan=(20, n)) for i in keep],
        )
    found = design_calibration(*case).metrics
    assert (found["tpr"], found["tnr"]) == pytest.approx(_weighted(*case))
    assert by_pool(*case)["p"].without_bias == ()


def test_records_that_contradict_the_plan_or_the_places_are_refused():
    """Every edit of the records that changes which labels weigh how much, without a label
    changed, is refused: the plan, the rounds, the places and the rounds' sizes are checked
    against each other and against the pool's order."""
    labels, verdicts, drawn = _planned((20, 20))
    ranked = [replace(d, rank=f"{d.stratum}{d.position:04d}") for d in drawn]

    def refused(edited, words):  # as calibrate and the gate check the set they read
        with pytest.raises(DesignError, match=words):
            verify_design(labels, verdicts, edited)

    refused([replace(drawn[0], plan=(20, 21)), *drawn[1:]], "different plans of rounds")
    # a reply of round 2 moved before one of round 1 in its stratum's order
    first_pass = next(i for i, d in enumerate(drawn) if d.stratum == "pass" and d.round == 1)
    later_pass = next(i for i, d in enumerate(drawn) if d.stratum == "pass" and d.round == 2)
    swapped = list(drawn)
    swapped[first_pass] = replace(drawn[first_pass], round=2)
    swapped[later_pass] = replace(drawn[later_pass], round=1)
    refused(swapped, "round 1 at place .*, after one of round 2 at place 0")
    # the round boundary moved between strata, each round's total kept: the last 'pass' of round
    # 1 into round 2 and the first 'fail' of round 2 into round 1
    last_pass = max(
        (i for i, d in enumerate(drawn) if d.stratum == "pass" and d.round == 1),
        key=lambda i: drawn[i].position,
    )
    first_fail = min(
        (i for i, d in enumerate(drawn) if d.stratum == "fail" and d.round == 2),
        key=lambda i: drawn[i].position,
    )
    moved = list(drawn)
    moved[last_pass] = replace(drawn[last_pass], round=2)
    moved[first_fail] = replace(drawn[first_fail], round=1)
    refused(moved, "round 1 holds .* but label --next allocates it")
    # every record said to be of round 1: more than its plan gives it
    refused([replace(d, round=1) for d in drawn], "round 1 holds 40 of the replies")
    # two records of a stratum swapping places (a bad reply moved into the later round)
    bad = next(i for i, d in enumerate(ranked) if d.stratum == "pass" and not labels[i])
    good = max(
        (i for i, d in enumerate(ranked) if d.stratum == "pass" and d.round == 2),
        key=lambda i: ranked[i].position,
    )
    places = list(ranked)
    places[bad] = replace(ranked[bad], position=ranked[good].position, round=2)
    places[good] = replace(ranked[good], position=ranked[bad].position, round=1)
    refused(places, "before the one at place .* in the pool's fixed random order")
    refused([replace(d, rate=None) for d in drawn], "do not name one rate it was drawn for")
    # the stratum sizes edited alike in every record (a pool of one round too: its allocation is
    # the sizes')
    bigger = (("fail", 200), ("pass", 500))
    refused(
        [replace(d, sizes=bigger) for d in drawn], "round 1 holds .* but label --next allocates"
    )
    one = _planned((20,))
    with pytest.raises(DesignError, match="label --next allocates"):
        verify_design(one[0], one[1], [replace(d, sizes=bigger) for d in one[2]])
    # the last round cut short after its labels were seen: refused until the rest are labelled
    cut = [i for i, d in enumerate(drawn) if not (d.round == 2 and d.stratum == "pass")]
    with pytest.raises(
        DesignError, match="round 2 drew .* more replies that the set does not hold"
    ):
        verify_design([labels[i] for i in cut], [verdicts[i] for i in cut], [drawn[i] for i in cut])
    # as drawn, with the keys: accepted, and estimated without a ratio's bias
    verify_design(labels, verdicts, ranked)
    assert by_pool(labels, verdicts, ranked)["p"].without_bias == ("tpr", "tnr")
