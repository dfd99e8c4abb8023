"""Selective judging's certified threshold (judgekit.stats.selective) against a plain, independent
fixed-sequence computation with scipy's binomial test and beta quantiles; ties, abstentions, the
case where nothing certifies, and one LLMBar set-up from ../shared. benchmarks/selective.py
measures validity and coverage by simulation."""

from __future__ import annotations

import csv
import math

import pytest
from hypothesis import given, settings, strategies as st
from scipy.stats import beta, binomtest

from judgekit.stats.selective import (
    Certified,
    agreement_of,
    certify,
    confidence_from_logprob,
    confidence_from_trials,
    fewest_to_certify,
)


def certify_fs(*args, **kwargs) -> Certified:
    """`certify` with the fixed sequence from the top alone, at the whole risk."""
    return certify(*args, **kwargs, procedure="fixed-sequence")


def by_hand(labels, verdicts, confidences, min_agreement=0.9, delta=0.1, min_covered=1) -> dict:
    """Fixed-sequence testing written out: thresholds from high to low, each covering every
    decided example at or above it; skip those covering too few to ever reject; stop at the
    first the one-sided exact test does not reject."""
    fewest = 1
    while binomtest(fewest, fewest, min_agreement, alternative="greater").pvalue > delta:
        fewest += 1
    found, tested = None, 0
    for t in sorted(
        {c for c, v in zip(confidences, verdicts, strict=True) if v is not None}, reverse=True
    ):
        covered = [
            (x, v)
            for x, v, c in zip(labels, verdicts, confidences, strict=True)
            if v is not None and c >= t
        ]
        if len(covered) < max(fewest, min_covered):
            continue
        tested += 1
        agreeing = sum(x == v for x, v in covered)
        if binomtest(agreeing, len(covered), min_agreement, alternative="greater").pvalue > delta:
            break
        found = (t, covered, agreeing)
    if found is None:
        return {"threshold": None, "covered": 0, "tested": tested}
    t, covered, agreeing = found
    m = len(covered)
    positives = [v for x, v in covered if x]
    negatives = [v for x, v in covered if not x]
    return {
        "threshold": t,
        "covered": m,
        "tested": tested,
        "agreement": agreeing / m,
        "agreement_lower": beta.ppf(delta, agreeing, m - agreeing + 1) if agreeing else 0.0,
        "coverage": m / len(labels),
        "tpr": sum(positives) / len(positives) if positives else None,
        "tnr": sum(not v for v in negatives) / len(negatives) if negatives else None,
    }


def same(got: Certified, expected: dict) -> None:
    assert (got.threshold, got.covered, got.tested) == (
        expected["threshold"],
        expected["covered"],
        expected["tested"],
    )
    if expected["threshold"] is None:
        assert math.isnan(got.agreement) and math.isnan(got.agreement_lower)
        # with no example, coverage is undefined
        assert got.coverage == 0.0 if got.n else math.isnan(got.coverage)
        assert got.tpr is None and got.tnr is None
        return
    for name in ("agreement", "agreement_lower", "coverage", "tpr", "tnr"):
        value = getattr(got, name)
        wanted = (
            expected[name] if expected[name] is None else pytest.approx(expected[name], abs=1e-9)
        )
        assert value == wanted, name
    assert got.coverage_interval[0] <= got.coverage <= got.coverage_interval[1]


def graded(n_good: int, n_bad: int, good_at: float, bad_at: float):
    """A judge right on `n_good` examples at confidence `good_at` and wrong on `n_bad`
    at `bad_at`."""
    labels = [i % 2 == 0 for i in range(n_good + n_bad)]
    verdicts = [x if i < n_good else not x for i, x in enumerate(labels)]
    return labels, verdicts, [good_at] * n_good + [bad_at] * n_bad


# Calibration sets as hypothesis draws them: (label, verdict, confidence on a grid of 13 values,
# so that ties abound) rows, min_agreement, delta, min_covered, and whether the surer verdicts are
# made to agree (`judged`) so that the sequences go deep.
CALIBRATIONS = given(
    st.lists(
        st.tuples(st.booleans(), st.sampled_from([True, False, None]), st.integers(0, 12)),
        max_size=200,
    ),
    st.floats(0.6, 0.95),
    st.sampled_from([0.05, 0.1, 0.2]),
    st.sampled_from([1, 30]),
    st.booleans(),
)


def judged(rows, agree_when_sure):
    """(labels, verdicts, confidences) of drawn rows."""
    labels = [x for x, _, _ in rows]
    verdicts = [
        (x if c >= 4 else v) if agree_when_sure and v is not None else v for x, v, c in rows
    ]
    return labels, verdicts, [c / 12 for _, _, c in rows]


@settings(max_examples=150, deadline=None)
@CALIBRATIONS
def test_certify_is_the_fixed_sequence_test_written_out(
    rows, min_agreement, delta, min_covered, agree_when_sure
):
    labels, verdicts, confidences = judged(rows, agree_when_sure)
    got = certify_fs(labels, verdicts, confidences, min_agreement, delta, min_covered)
    same(got, by_hand(labels, verdicts, confidences, min_agreement, delta, min_covered))
    assert (got.n, got.min_agreement, got.delta) == (len(rows), min_agreement, delta)


def test_a_worked_sequence_stops_at_the_first_failure():
    # 40 right at 0.9, then 10 wrong at 0.8, then 200 right at 0.7: 0.7 alone would certify
    # (240 of 250), but the sequence stops at 0.8 (40 of 50) and never reaches it.
    labels, verdicts, confidences = graded(40, 10, 0.9, 0.8)
    more = graded(200, 0, 0.7, 0.0)
    labels, verdicts, confidences = labels + more[0], verdicts + more[1], confidences + more[2]
    got = certify_fs(labels, verdicts, confidences)
    assert (got.threshold, got.covered, got.agreement, got.tested, got.n) == (0.9, 40, 1.0, 2, 250)
    # all agree: the bound is delta ** (1 / m)
    assert got.agreement_lower == pytest.approx(0.1 ** (1 / 40))
    # what a search without order would take
    assert binomtest(240, 250, 0.9, alternative="greater").pvalue <= 0.1
    assert got.tpr == 1.0 and got.tnr == 1.0


def test_a_threshold_covers_every_tie():
    # 25 right at 0.9; at 0.7, 20 ties of which 5 are right. Covering only the first five of the
    # ties (30 of 30 agree) would certify 0.7; the tie group as a whole (30 of 45) does not.
    labels, verdicts, confidences = graded(25, 0, 0.9, 0.0)
    ties = graded(5, 15, 0.7, 0.7)
    for order in (slice(None), slice(None, None, -1)):
        got = certify_fs(
            labels + ties[0][order], verdicts + ties[1][order], confidences + ties[2][order]
        )
        assert (got.threshold, got.covered, got.tested) == (0.9, 25, 2)
    # And with every example tied, the only threshold covers them all.
    got = certify_fs(*graded(60, 2, 0.5, 0.5))
    assert (got.threshold, got.covered, got.agreement, got.tested) == (0.5, 62, 60 / 62, 1)


def test_abstentions_are_never_covered():
    labels, verdicts, confidences = graded(40, 0, 0.8, 0.0)
    plain = certify_fs(labels, verdicts, confidences)
    # Abstentions at the highest confidence, and one with no confidence at all: none is covered,
    # none is a candidate threshold, and each counts in n (coverage falls).
    got = certify_fs(
        labels + [True] * 9 + [False], verdicts + [None] * 10, confidences + [1.0] * 9 + [math.nan]
    )
    assert (got.threshold, got.covered, got.agreement, got.tested) == (
        plain.threshold,
        40,
        1.0,
        plain.tested,
    )
    assert (got.n, got.coverage) == (50, 0.8)
    assert agreement_of(labels + [False], verdicts + [None], confidences + [1.0], 0.8) == (1.0, 40)


def test_when_no_threshold_certifies():
    # 85% agreement at every confidence is not certified at 90%.
    labels, verdicts, confidences = graded(85, 15, 0.6, 0.6)
    got = certify_fs(labels, verdicts, confidences)
    assert (got.threshold, got.covered, got.coverage, got.tested, got.n) == (None, 0, 0.0, 1, 100)
    assert math.isnan(got.agreement) and got.tpr is None
    assert got.coverage_interval == pytest.approx((0.0, 0.037), abs=1e-3)
    assert got.words() == (
        "no confidence threshold is certified to agree with people on ≥ 90% of its verdicts "
        "(at 90%): every verdict is escalated"
    )
    # 21 examples that all agree cannot certify 90% at delta 0.1 (0.9 ** 21 > 0.1):
    # nothing is tested.
    few = certify_fs(*graded(21, 0, 0.9, 0.0))
    assert (few.threshold, few.tested) == (None, 0)
    assert certify_fs(*graded(22, 0, 0.9, 0.0)).threshold == 0.9


def test_min_covered_moves_the_start_down():
    # 25 at 0.95 with 3 wrong stop the sequence at its first test; starting at 26
    # covered skips them.
    labels, verdicts, confidences = graded(22, 3, 0.95, 0.95)
    more = graded(200, 0, 0.5, 0.0)
    args = labels + more[0], verdicts + more[1], confidences + more[2]
    assert (certify_fs(*args).threshold, certify_fs(*args).tested) == (None, 1)
    got = certify_fs(*args, min_covered=26)
    assert (got.threshold, got.covered, got.agreement, got.tested) == (0.5, 225, 222 / 225, 1)
    assert certify_fs(*args, min_covered=226).tested == 0


def test_min_agreement_0_9_at_delta_0_1_needs_the_bound():
    got = certify_fs(*graded(95, 5, 0.5, 0.5))
    assert got.threshold == 0.5 and got.agreement_lower == pytest.approx(beta.ppf(0.1, 95, 6))
    assert got.agreement_lower >= 0.9
    assert certify_fs(*graded(94, 6, 0.5, 0.5)).threshold is None  # its bound is 0.896


def test_words():
    got = certify_fs(*graded(190, 10, 0.9, 0.9))
    assert got.words() == (
        "agrees with people on ≥ 90% of the verdicts it gives (certified at 90%; of them, "
        "TPR 0.95 on 100 known-good, TNR 0.95 on 100 known-bad), "
        "gives verdicts on 100% [98%, 100%] of examples"
    )
    labels, verdicts, confidences = graded(60, 0, 0.9, 0.0)
    got = certify_fs(
        labels + [True] * 40,
        verdicts + [None] * 40,
        confidences + [0.1] * 40,
        min_agreement=0.8,
        delta=0.05,
    )
    assert got.words() == (
        "agrees with people on ≥ 80% of the verdicts it gives (certified at 95%; of them, "
        "TPR 1.00 on 30 known-good, TNR 1.00 on 30 known-bad), "
        "gives verdicts on 60% [50%, 69%] of examples"
    )


def test_a_judge_that_passes_everything_is_certified_only_with_its_tnr_beside():
    """Issue 34, item 4: on 400 known-good and 25 known-bad replies a judge that passes every one
    agrees on 94% and is certified at 90%, which the words said alone; they carry each class's
    rate on the verdicts given, so the TNR of 0 shows where the certificate is read."""
    labels = [True] * 400 + [False] * 25
    got = certify_fs(labels, [True] * 425, [0.9] * 425, min_agreement=0.9, delta=0.1)
    assert got.threshold == 0.9 and got.agreement == pytest.approx(400 / 425)
    assert "of them, TPR 1.00 on 400 known-good, TNR 0.00 on 25 known-bad" in got.words()


def test_fewest_to_certify_is_where_all_agreeing_first_rejects():
    for min_agreement, delta in [(0.9, 0.1), (0.8, 0.05), (0.95, 0.01), (0.5, 0.5), (0.99, 0.1)]:
        m = fewest_to_certify(min_agreement, delta)
        assert binomtest(m, m, min_agreement, alternative="greater").pvalue <= delta
        assert (
            m == 1 or binomtest(m - 1, m - 1, min_agreement, alternative="greater").pvalue > delta
        )


def test_agreement_of_on_fresh_examples():
    labels = [True, True, False, False, True]
    verdicts = [True, False, False, None, True]
    confidences = [0.9, 0.7, 0.8, 0.95, 0.6]
    assert agreement_of(labels, verdicts, confidences, 0.8) == (1.0, 2)
    assert agreement_of(labels, verdicts, confidences, 0.7) == (2 / 3, 3)
    assert agreement_of(labels, verdicts, confidences, 0.6) == (0.75, 4)
    nothing = agreement_of(labels, verdicts, confidences, 0.99)
    assert math.isnan(nothing[0]) and nothing[1] == 0
    assert math.isnan(agreement_of(labels, verdicts, confidences, None)[0])


def test_confidences_from_trials_and_logprobs():
    got = confidence_from_trials(
        [
            [True] * 5,
            [True, False, True, True, False],
            [False, None, False, True],
            [True, False],
            [None],
        ]
    )
    assert got[:4] == [1.0, 0.6, 0.5, 0.5] and math.isnan(got[4]) and len(got) == 5
    assert confidence_from_logprob(math.log(0.73)) == pytest.approx(0.73)
    assert confidence_from_logprob(0.0) == 1.0 and confidence_from_logprob(1e-6) == 1.0
    assert confidence_from_logprob(-1e9) == 0.0 and math.isnan(confidence_from_logprob(math.nan))


def test_bad_input_says_how_to_fix_it():
    with pytest.raises(ValueError, match="one of each per example"):
        certify_fs([True, False], [True], [0.5, 0.5])
    with pytest.raises(ValueError, match="example 1 has a verdict but no confidence"):
        certify_fs([True, False], [True, False], [0.5, math.nan])
    with pytest.raises(ValueError, match="min_agreement=1.2"):
        certify_fs([True], [True], [0.5], min_agreement=1.2)
    with pytest.raises(ValueError, match="delta=0"):
        certify_fs([True], [True], [0.5], delta=0)


@pytest.mark.shared_data
@pytest.mark.parametrize(
    "llm, strategy, threshold, covered, agreeing",
    [
        ("GPT-4", "CoT", 1.0, 91, 90),  # the orders agree on 91: certified there, 0.5 (all 100) not
        ("PaLM2", "Reference", 1.0, 81, 77),
        # 94 of 100 agree, all with both orders agreeing: the bound is 0.896
        (
            "GPT-4",
            "Swap_CoT",
            None,
            0,
            0,
        ),
    ],
)
def test_an_llmbar_setup_against_the_independent_computation(
    shared_datasets, llm, strategy, threshold, covered, agreeing
):
    labels, verdicts, confidences = [], [], []
    with open(shared_datasets / "llmbar" / "verdicts.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            if (row["set"], row["llm"], row["strategy"]) == ("LLMBar/Natural", llm, strategy):
                ab, ba = row["winner_order_AB"], row["winner_order_BA"]
                labels.append(row["label"] == "1")
                verdicts.append(None if ab == "" else ab == "1")
                confidences.append(1.0 if ab != "" and ab == ba else 0.5)
    assert len(labels) == 100
    got = certify_fs(labels, verdicts, confidences, min_agreement=0.9, delta=0.1)
    same(got, by_hand(labels, verdicts, confidences))
    # the figures in benchmarks/README.md
    assert (got.threshold, got.covered) == (
        threshold,
        covered,
    )
    if threshold is not None:
        assert got.agreement == agreeing / covered
        assert got.agreement_lower == pytest.approx(beta.ppf(0.1, agreeing, covered - agreeing + 1))


# The default: both procedures, each at delta / 2 (issue 34, item 3).


def held_apart_by_hand(labels, verdicts, confidences, keys, min_agreement, delta, min_covered=1):
    """The held-apart order written out: which examples rank by a hash of the key, the ranking
    examples' smoothed agreement predicting each threshold's p-value on the others, the
    thresholds tested on the others in that order, stopping at the first failure; the lowest
    rejected."""
    import hashlib

    from scipy.stats import binom

    ranks = [
        int.from_bytes(hashlib.blake2b(k.encode(), digest_size=8).digest(), "big") < 0.3 * 2**64
        for k in keys
    ]
    fewest = 1
    while binomtest(fewest, fewest, min_agreement, alternative="greater").pvalue > delta:
        fewest += 1
    rows = list(zip(labels, verdicts, confidences, ranks, strict=True))
    candidates = []
    for t in sorted({c for _, v, c, _ in rows if v is not None}, reverse=True):
        test = [x == v for x, v, c, r in rows if v is not None and c >= t and not r]
        rank = [x == v for x, v, c, r in rows if v is not None and c >= t and r]
        if len(test) < max(fewest, min_covered):
            continue
        estimate = (sum(rank) + 0.5) / (len(rank) + 1)
        predicted = binom.sf(round(estimate * len(test)) - 1, len(test), min_agreement)
        candidates.append((predicted, -t, t, sum(test), len(test)))
    found = None
    for _, _, t, agreeing, m in sorted(candidates):
        if binomtest(agreeing, m, min_agreement, alternative="greater").pvalue > delta:
            break
        found = t if found is None else min(found, t)
    return found


@settings(max_examples=150, deadline=None)
@CALIBRATIONS
def test_the_default_is_the_lower_of_both_procedures_each_at_half_the_risk(
    rows, min_agreement, delta, min_covered, agree_when_sure
):
    labels, verdicts, confidences = judged(rows, agree_when_sure)
    keys = [f"example-{i}" for i in range(len(rows))]
    got = certify(labels, verdicts, confidences, min_agreement, delta, min_covered, keys)
    top = by_hand(labels, verdicts, confidences, min_agreement, delta / 2, min_covered)
    ranked = held_apart_by_hand(
        labels, verdicts, confidences, keys, min_agreement, delta / 2, min_covered
    )
    found = [t for t in (top["threshold"], ranked) if t is not None]
    assert got.threshold == (min(found) if found else None)
    assert (got.delta, got.min_agreement) == (delta, min_agreement)  # what it states it certifies


def test_one_failure_high_up_no_longer_stops_the_search():
    # 40 right at 0.9, 10 wrong at 0.8, 200 right at 0.7: the fixed sequence from the top stops at
    # 0.8 (40 of 50); the held-apart order tests 0.7 (240 of 250) first and certifies it.
    labels, verdicts, confidences = graded(40, 10, 0.9, 0.8)
    more = graded(200, 0, 0.7, 0.0)
    labels, verdicts, confidences = labels + more[0], verdicts + more[1], confidences + more[2]
    assert certify_fs(labels, verdicts, confidences).threshold == 0.9
    got = certify(labels, verdicts, confidences)
    assert (got.threshold, got.covered, got.agreement) == (0.7, 250, 0.96)
    assert got.agreement_lower >= 0.9  # the testing examples' bound, at delta / 2


def test_a_judge_least_accurate_at_its_highest_confidence_is_certified_below_it():
    # 30 at 0.95 of which 12 wrong, then 300 at 0.8 of which 6 wrong: every threshold from the top
    # starts at 0.95 (18 of 30), where the fixed sequence stops with nothing certified.
    labels, verdicts, confidences = graded(18, 12, 0.95, 0.95)
    more = graded(294, 6, 0.8, 0.8)
    labels, verdicts, confidences = labels + more[0], verdicts + more[1], confidences + more[2]
    assert certify_fs(labels, verdicts, confidences).threshold is None
    got = certify(labels, verdicts, confidences)
    assert got.threshold == 0.8 and got.covered == 330


def test_the_certificate_does_not_depend_on_the_order_of_the_examples():
    import random

    rng = random.Random(7)
    rows = [(rng.random() < 0.5, rng.random()) for _ in range(400)]
    labels = [x for x, _ in rows]
    verdicts = [x if rng.random() < 0.5 + 0.5 * c else not x for x, c in rows]
    confidences = [round(c, 2) for _, c in rows]
    keys = [f"ex-{i}" for i in range(400)]
    first = certify(labels, verdicts, confidences, 0.8, 0.1, keys=keys)
    order = list(range(400))
    rng.shuffle(order)
    again = certify(
        [labels[i] for i in order],
        [verdicts[i] for i in order],
        [confidences[i] for i in order],
        0.8,
        0.1,
        keys=[keys[i] for i in order],
    )
    assert first.threshold is not None and first == again


def test_the_policy_and_the_statistic_name_the_same_procedures():
    from judgekit.inputs.policy import PROCEDURES as POLICY
    from judgekit.stats.selective import PROCEDURES

    assert POLICY == PROCEDURES
    with pytest.raises(ValueError, match="procedure='bogus': use one of both, fixed-sequence"):
        certify([True], [True], [0.9], procedure="bogus")
