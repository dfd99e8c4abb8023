"""Selective judging: a confidence threshold certified so that the verdicts at or above it agree
with the labels at a target rate, with a stated probability. Pure functions, no I/O.

A judge gives each verdict a confidence (higher = surer): the share of its trials that agree
with their majority (`confidence_from_trials`), or the probability of its answer token
(`confidence_from_logprob`). `certify` chooses, on labelled examples, the lowest threshold whose
verdicts agree with the labels on at least `min_agreement` of them with probability at least
1 - `delta` (fixed-sequence testing from the top, as Jung et al. 2024, "Trust or Escalate", and in
an order a held-apart share of the examples gives, as Learn-then-Test; each at delta / 2);
verdicts below it are escalated. An abstention is never covered. `benchmarks/selective.py`
measures, by simulation, how often the agreement realised on fresh examples at the chosen
threshold reaches the target, and the coverage against the best an oracle could certify.

>>> labels = [True] * 30 + [False] * 30
>>> verdicts = labels[:25] + [False] * 5 + labels[30:55] + [True] * 5  # wrong on the 10 least sure
>>> confidences = [0.9] * 25 + [0.6] * 5 + [0.9] * 25 + [0.6] * 5
>>> c = certify(labels, verdicts, confidences, min_agreement=0.9, delta=0.1)
>>> c.threshold, c.covered, c.agreement, round(c.agreement_lower, 3)  # the bound at delta / 2
(0.9, 50, 1.0, 0.942)
>>> print(c.words())  # doctest: +NORMALIZE_WHITESPACE
agrees with people on ≥ 90% of the verdicts it gives (certified at 90%; of them, TPR 1.00 on 25
known-good, TNR 1.00 on 25 known-bad), gives verdicts on 83% [72%, 91%] of examples
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from judgekit.stats.metrics import NAN, wilson


@dataclass(frozen=True)
class Certified:
    """What `certify` found: the threshold (None when none certifies) and the figures at it.

    `agreement` is observed on the covered examples (those with a verdict and a confidence at or
    above the threshold); `agreement_lower` is the one-sided Clopper-Pearson bound at level
    1 - `delta` that certified it; `coverage` is `covered` / `n` (every example, abstentions
    included) with its 95% Wilson interval; `tpr`, `tnr` are over the covered examples (None when
    a class is not covered); `tested` counts the thresholds tested, the last failing one included.
    With no threshold nothing is covered: agreement and its bound are NaN, coverage 0.

    >>> none = Certified(None, NAN, NAN, 0, 40, 0.0, (0.0, 0.088), None, None, 1, 0.9, 0.1)
    >>> print(none.words())  # doctest: +NORMALIZE_WHITESPACE
    no confidence threshold is certified to agree with people on ≥ 90% of its verdicts (at 90%):
    every verdict is escalated
    """

    threshold: float | None
    agreement: float
    agreement_lower: float
    covered: int
    n: int
    coverage: float
    coverage_interval: tuple[float, float]
    tpr: float | None
    tnr: float | None
    tested: int
    min_agreement: float  # the target and its risk, so that the result states what it certifies
    delta: float
    # of the covered verdicts: (passes on known-good, known-good, fails on known-bad, known-bad)
    classes: tuple[int, int, int, int] = (0, 0, 0, 0)

    def words(self) -> str:
        """One line for the report and the gate."""
        target, level = _percent(self.min_agreement), _percent(1 - self.delta)
        if self.threshold is None:
            return (
                f"no confidence threshold is certified to agree with people on ≥ {target} "
                "of its verdicts "
                f"(at {level}): every verdict is escalated"
            )
        return _certified(
            self.min_agreement, self.delta, self.coverage, self.coverage_interval, self.classes
        )


def _percent(share: float) -> str:
    return f"{100 * share:.0f}%"


def _certified(
    min_agreement: float,
    delta: float,
    coverage: float,
    interval: tuple[float, float],
    classes: tuple[int, int, int, int],
) -> str:
    """What a certificate states, in the words the report and the gate use: the agreement it
    certifies beside each class's rate on the verdicts it gives (agreement alone flatters a judge
    that passes everything on a set of mostly good replies)."""
    tp, good, tn, bad = classes
    tpr = f"TPR {tp / good:.2f} on {good} known-good" if good else "no known-good"
    tnr = f"TNR {tn / bad:.2f} on {bad} known-bad" if bad else "no known-bad"
    return (
        f"agrees with people on ≥ {_percent(min_agreement)} of the verdicts it gives (certified at "
        f"{_percent(1 - delta)}; of them, {tpr}, {tnr}), gives verdicts on {_percent(coverage)} "
        f"[{_percent(interval[0])}, {_percent(interval[1])}] of examples"
    )


def _arrays(
    labels: Sequence[bool], verdicts: Sequence[bool | None], confidences: Sequence[float]
) -> tuple[Any, ...]:
    """(labels, decided, verdicts, confidences) as numpy arrays; a verdict's confidence must be a
    number."""
    import numpy as np

    n = len(labels)
    if len(verdicts) != n or len(confidences) != n:
        raise ValueError(
            f"{n} labels, {len(verdicts)} verdicts and {len(confidences)} confidences: "
            "give one of each "
            "per example"
        )
    label = np.asarray(labels, dtype=bool).reshape(n)
    given = np.asarray(verdicts, dtype=object).reshape(n)
    decided = np.array([v is not None for v in given], dtype=bool).reshape(n)
    verdict = np.equal(given, True).astype(bool)  # an abstention is False here, masked by `decided`
    confidence = np.asarray(confidences, dtype=float).reshape(n)
    unknown = decided & np.isnan(confidence)
    if unknown.any():
        raise ValueError(
            f"example {int(np.argmax(unknown))} has a verdict but no confidence (NaN): "
            "give every verdict "
            "a confidence, or make it an abstention (None)"
        )
    return label, decided, verdict, confidence


def _check(min_agreement: float, delta: float, min_covered: int) -> None:
    if not 0 < min_agreement < 1:
        raise ValueError(f"min_agreement={min_agreement}: give a share between 0 and 1, e.g. 0.9")
    if not 0 < delta < 1:
        raise ValueError(f"delta={delta}: give the risk accepted, between 0 and 1, e.g. 0.1")
    if min_covered < 1:
        raise ValueError(f"min_covered={min_covered}: give at least 1")


def fewest_to_certify(min_agreement: float, delta: float) -> int:
    """The fewest covered examples that can certify `min_agreement` at all: with every one of them
    agreeing, the exact test rejects (min_agreement ** m <= delta).

    >>> fewest_to_certify(0.9, 0.1), fewest_to_certify(0.8, 0.05)
    (22, 14)
    """
    _check(min_agreement, delta, 1)
    m = max(1, math.ceil(math.log(delta) / math.log(min_agreement)))
    while min_agreement**m > delta:  # guard the rounding of the logarithms, both ways
        m += 1
    while m > 1 and min_agreement ** (m - 1) <= delta:
        m -= 1
    return m


def lower_bound(agreeing: int, covered: int, delta: float) -> float:
    """The one-sided Clopper-Pearson lower bound of an agreement rate at level 1 - delta; NaN with
    nothing covered."""
    from scipy.stats import beta

    if covered <= 0:
        return NAN
    return 0.0 if agreeing <= 0 else float(beta.ppf(delta, agreeing, covered - agreeing + 1))


# How `certify` searches: both procedures below, each at half the risk (the default), or the
# fixed sequence alone at the whole risk.
PROCEDURES = ("both", "fixed-sequence")
# The share of examples that rank the thresholds for the held-apart procedure; the rest test them.
RANKING_SHARE = 0.3


def certify(  # noqa: PLR0913  the statistic's own parameters, each named at the call
    labels: Sequence[bool],
    verdicts: Sequence[bool | None],
    confidences: Sequence[float],
    min_agreement: float = 0.9,
    delta: float = 0.1,
    min_covered: int = 1,
    keys: Sequence[str] | None = None,
    procedure: str = "both",
) -> Certified:
    """The lowest confidence threshold whose verdicts agree with the labels on at least
    `min_agreement` of them with probability at least 1 - `delta`, and the figures at it.

    Two searches, each at risk delta / 2, and the lower threshold either certifies (Bonferroni
    over the two: the chance that either certifies a threshold that falls short is at most
    delta); with `procedure="fixed-sequence"`, the first alone at risk delta:

    - **Fixed sequence from the top** (`fixed_sequence`): the thresholds tested from the highest
      confidence down, stopping at the first that fails. Best where agreement falls as
      confidence falls; one failure high up stops it, and a judge least accurate at its highest
      confidence certifies nothing.
    - **Fixed sequence in a held-apart order** (`held_apart`, Learn-then-Test): a share of the
      examples (`RANKING_SHARE`, chosen by a hash of each example's key, so neither the set's
      order nor a seed decides) ranks the thresholds by the p-value it predicts for the others;
      the others test them in that order, stopping at the first failure. Near the best threshold
      whatever the shape, at the price of testing on fewer examples.

    `keys` names each example (its id): which examples rank and which test. Without them, their
    places do. `benchmarks/selective.py` measures validity and coverage against the best single
    threshold an oracle would test.
    """
    if procedure not in PROCEDURES:
        raise ValueError(f"procedure={procedure!r}: use one of {', '.join(PROCEDURES)}")
    _check(min_agreement, delta, min_covered)
    arrays = _arrays(labels, verdicts, confidences)
    if procedure == "fixed-sequence":
        return fixed_sequence(arrays, min_agreement, delta, min_covered)
    if keys is not None and len(keys) != len(labels):
        raise ValueError(f"{len(labels)} labels and {len(keys)} keys: give one key per example")
    top = fixed_sequence(arrays, min_agreement, delta / 2, min_covered)
    ranked = held_apart(arrays, min_agreement, delta / 2, min_covered, keys)
    found = min(
        (c for c in (top, ranked) if c.threshold is not None),
        key=lambda c: c.threshold if c.threshold is not None else math.inf,
        default=top,
    )
    return replace(found, delta=delta, tested=top.tested + ranked.tested)


def fixed_sequence(
    arrays: tuple[Any, ...], min_agreement: float, delta: float, min_covered: int
) -> Certified:
    """Fixed-sequence testing from the top (Jung et al. 2024, "Trust or Escalate").

    The candidate thresholds are the distinct confidences of the examples with a verdict, tested
    from the highest down. At a threshold t the covered examples are those with a verdict and a
    confidence >= t (every tie at t is covered: a threshold never splits equal confidences); the
    null hypothesis "their agreement rate is below `min_agreement`" is tested with the exact
    one-sided binomial test, rejected when P(Bin(covered, min_agreement) >= agreeing) <= delta,
    which is when the Clopper-Pearson lower bound at level 1 - delta reaches `min_agreement`.
    Testing goes on while the test rejects; the certified threshold is the last one rejected.

    Why no correction for testing many thresholds: the order of the tests is fixed by the
    confidences alone, before any label is looked at, and testing stops at the first threshold
    not rejected. To certify a threshold whose true agreement is below the target, the procedure
    must reject the first such threshold in the order (every threshold down to it is tested and
    rejected on the way), and that one test, on its own, errs with probability at most delta. So
    the chance of certifying any threshold that falls short is at most delta, with no division
    of delta between the tests (fixed-sequence testing; Bauer 1991). The candidates are the
    confidences observed, not a grid fixed in advance, so the argument holds given the
    confidences.

    The thresholds at the top cover few examples, and one covering fewer than
    `fewest_to_certify(min_agreement, delta)` (22 at 0.9 and 0.1) cannot be rejected even if
    every verdict agrees: it would stop the search before it starts. Such thresholds, and those
    covering fewer than `min_covered`, are skipped: the sequence starts at the highest threshold
    covering max(`min_covered`, that fewest) examples. What is skipped depends on the numbers
    covered, not on the labels, so the sequence is still fixed before the labels are seen.
    """
    import numpy as np

    label, decided, verdict, confidence = arrays
    order = np.argsort(-confidence[decided], kind="stable")
    sure = confidence[decided][order]
    agree = (verdict == label)[decided][order]
    covered = np.arange(1, len(sure) + 1)
    agreeing = np.cumsum(agree)
    last_of_tie = np.append(sure[1:] != sure[:-1], True) if len(sure) else np.zeros(0, dtype=bool)
    start = max(min_covered, fewest_to_certify(min_agreement, delta))
    # index of the last covered example per threshold
    candidates = np.flatnonzero(last_of_tie & (covered >= start))
    found, tested = -1, 0
    if len(candidates):
        from scipy.stats import binom

        sizes, hits = covered[candidates], agreeing[candidates]
        rejected = binom.sf(hits - 1, sizes, min_agreement) <= delta
        failed = np.flatnonzero(~rejected)
        # the thresholds rejected before the first failure
        passed = int(failed[0]) if len(failed) else len(candidates)
        tested = min(passed + 1, len(candidates))
        found = int(candidates[passed - 1]) if passed else -1
    if found < 0:
        return _at(arrays, None, NAN, tested, min_agreement, delta)
    m, k = int(covered[found]), int(agreeing[found])
    return _at(arrays, float(sure[found]), lower_bound(k, m, delta), tested, min_agreement, delta)


def held_apart(
    arrays: tuple[Any, ...],
    min_agreement: float,
    delta: float,
    min_covered: int,
    keys: Sequence[str] | None = None,
) -> Certified:
    """Fixed-sequence testing in the order a held-apart share of the examples gives
    (Learn-then-Test, Angelopoulos et al. 2021).

    The examples whose key hashes into the first `RANKING_SHARE` rank; the rest test. For each
    candidate threshold (a distinct confidence, as `fixed_sequence`; those covering fewer testing
    examples than max(`min_covered`, `fewest_to_certify`) are left out, by counts alone), the
    ranking examples' agreement at it (smoothed: (agreeing + 1/2) / (covered + 1)) predicts the
    p-value the testing examples will give; the thresholds are tested in that order, most
    promising first (ties: the higher threshold first), on the testing examples alone, stopping
    at the first failure, and the certified threshold is the lowest rejected. The order is fixed
    before any testing label is looked at, so the fixed-sequence argument holds on the testing
    examples: the chance of certifying a threshold that falls short is at most delta. The figures
    at the threshold (agreement, coverage, the classes) are of every example; the bound is the
    testing examples' that certified it."""
    import numpy as np
    from scipy.stats import binom

    label, decided, verdict, confidence = arrays
    ranking = _ranking(keys if keys is not None else [str(i) for i in range(len(label))])
    agree = verdict == label
    candidates = np.unique(confidence[decided])[::-1]

    def counts(part: Any) -> tuple[Any, Any]:
        """Per candidate, the examples of `part` covered and those agreeing."""
        order = np.argsort(-confidence[part], kind="stable")
        sure, hits = confidence[part][order], np.cumsum(agree[part][order])
        covered = np.searchsorted(-sure, -candidates, side="right")
        return covered, np.where(
            covered > 0, hits[np.maximum(covered - 1, 0)] if len(hits) else 0, 0
        )

    ranked_m, ranked_k = counts(decided & ranking)
    test_m, test_k = counts(decided & ~ranking)
    start = max(min_covered, fewest_to_certify(min_agreement, delta))
    eligible = np.flatnonzero(test_m >= start)
    if not len(eligible):
        return _at(arrays, None, NAN, 0, min_agreement, delta)
    estimate = (ranked_k[eligible] + 0.5) / (ranked_m[eligible] + 1)
    sizes = test_m[eligible]
    predicted = binom.sf(np.round(estimate * sizes) - 1, sizes, min_agreement)
    order = eligible[np.lexsort((-candidates[eligible], predicted))]
    rejected = binom.sf(test_k[order] - 1, test_m[order], min_agreement) <= delta
    failed = np.flatnonzero(~rejected)
    passed = int(failed[0]) if len(failed) else len(order)
    tested = min(passed + 1, len(order))
    if not passed:
        return _at(arrays, None, NAN, tested, min_agreement, delta)
    best = int(order[:passed][np.argmin(candidates[order[:passed]])])
    bound = lower_bound(int(test_k[best]), int(test_m[best]), delta)
    return _at(arrays, float(candidates[best]), bound, tested, min_agreement, delta)


def _ranking(keys: Sequence[str]) -> Any:
    """Which examples rank the thresholds (True) and which test them: by a hash of each key."""
    import numpy as np

    cut = int(RANKING_SHARE * 2**64)
    return np.array(
        [
            int.from_bytes(hashlib.blake2b(k.encode(), digest_size=8).digest(), "big") < cut
            for k in keys
        ],
        dtype=bool,
    )


def _at(  # noqa: PLR0913  the certificate's parts, each named at the call
    arrays: tuple[Any, ...],
    threshold: float | None,
    bound: float,
    tested: int,
    min_agreement: float,
    delta: float,
) -> Certified:
    """The certificate at `threshold` (None: nothing certified), its figures over every example."""
    label, decided, verdict, confidence = arrays
    n = len(label)
    if threshold is None:
        return Certified(
            None,
            NAN,
            NAN,
            0,
            n,
            0.0 if n else NAN,
            wilson(0, n),
            None,
            None,
            tested,
            min_agreement,
            delta,
        )
    chosen = decided & (confidence >= threshold)
    m = int(chosen.sum())
    positive, negative = chosen & label, chosen & ~label
    tpr = float(verdict[positive].mean()) if positive.any() else None
    tnr = float((~verdict[negative]).mean()) if negative.any() else None
    classes = (
        int(verdict[positive].sum()),
        int(positive.sum()),
        int((~verdict[negative]).sum()),
        int(negative.sum()),
    )
    return Certified(
        threshold,
        float((verdict == label)[chosen].mean()),
        bound,
        m,
        n,
        m / n,
        wilson(m, n),
        tpr,
        tnr,
        tested,
        min_agreement,
        delta,
        classes,
    )


@dataclass(frozen=True)
class Cascade:
    """`certify_cascade`'s result: each stage's certificate (on the examples that reach it) and the
    figures of the cascade as a whole: the examples some stage gives a verdict on (`covered` of
    `n`), their agreement with the labels, and the coverage with its 95% Wilson interval."""

    stages: tuple[Certified, ...]
    covered: int
    n: int
    agreement: float
    coverage: float
    coverage_interval: tuple[float, float]
    min_agreement: float
    delta: float

    @property
    def certified(self) -> bool:
        return any(stage.threshold is not None for stage in self.stages)

    def words(self) -> str:
        """One line for the report and the gate."""
        if not self.certified:
            return (
                self.stages[0].words()
                if len(self.stages) == 1
                else (
                    "no judge of the cascade is certified to agree with people on "
                    f"≥ {_percent(self.min_agreement)} "
                    f"of its verdicts (at {_percent(1 - self.delta)}): every verdict is escalated"
                )
            )
        classes = tuple(sum(c) for c in zip(*(s.classes for s in self.stages), strict=True))
        said = _certified(
            self.min_agreement,
            self.delta,
            self.coverage,
            self.coverage_interval,
            (classes[0], classes[1], classes[2], classes[3]),
        )
        return said + (f" ({len(self.stages)} judges)" if len(self.stages) > 1 else "")


def certify_cascade(  # noqa: PLR0913  as certify
    labels: Sequence[bool],
    stages: Sequence[tuple[Sequence[bool | None], Sequence[float]]],
    min_agreement: float = 0.9,
    delta: float = 0.1,
    min_covered: int = 1,
    keys: Sequence[str] | None = None,
    procedure: str = "both",
) -> Cascade:
    """Certify a cascade of judges: the first judges every example and keeps those at or above its
    certified threshold; the rest go to the next judge, certified on them alone; what the last
    one does not keep is escalated to people. `stages` holds each judge's (verdicts, confidences)
    on every example; `keys` and `procedure` are `certify`'s. Each stage is certified at
    delta / (number of stages), so that with probability at least 1 - delta every stage's verdicts
    agree with people on at least `min_agreement`, and so do the cascade's, a mixture of them
    (Bonferroni over the stages; benchmarks/selective.py checks it by simulation). One stage is
    `certify`.

    >>> labels = [True, False] * 30
    >>> first = (labels[:40] + [not y for y in labels[40:]], [0.9] * 40 + [0.5] * 20)
    >>> second = (labels, [0.9] * 60)
    >>> c = certify_cascade(labels, [first, second], min_agreement=0.8, delta=0.1)
    >>> [s.threshold for s in c.stages], c.covered, c.agreement
    ([0.9, 0.9], 60, 1.0)
    """
    if not stages:
        raise ValueError("give at least one judge's (verdicts, confidences)")
    _check(min_agreement, delta, min_covered)
    n, share = len(labels), delta / len(stages)
    reaching = list(range(n))
    certified: list[Certified] = []
    covered = agreeing = 0
    for verdicts, confidences in stages:
        if len(verdicts) != n or len(confidences) != n:
            raise ValueError(
                f"{n} labels but a stage gives {len(verdicts)} verdicts and {len(confidences)} "
                "confidences: give each judge's verdict and confidence on every example"
            )
        sub = (
            [labels[i] for i in reaching],
            [verdicts[i] for i in reaching],
            [confidences[i] for i in reaching],
        )
        stage = certify(
            *sub,
            min_agreement=min_agreement,
            delta=share,
            min_covered=min_covered,
            keys=None if keys is None else [keys[i] for i in reaching],
            procedure=procedure,
        )
        certified.append(stage)
        if stage.threshold is None:
            continue
        kept = [
            i for i in reaching if verdicts[i] is not None and confidences[i] >= stage.threshold
        ]
        covered += len(kept)
        agreeing += sum(1 for i in kept if verdicts[i] == labels[i])
        gone = set(kept)
        reaching = [i for i in reaching if i not in gone]
    return Cascade(
        tuple(certified),
        covered,
        n,
        agreeing / covered if covered else NAN,
        covered / n if n else NAN,
        wilson(covered, n),
        min_agreement,
        delta,
    )


def agreement_of(
    labels: Sequence[bool],
    verdicts: Sequence[bool | None],
    confidences: Sequence[float],
    threshold: float | None,
) -> tuple[float, int]:
    """(agreement, covered) of the verdicts at or above `threshold`, e.g. on fresh examples;
    (NaN, 0) when nothing is covered or the threshold is None.

    >>> agreement_of([True, True, False], [True, False, None], [0.9, 0.8, 0.99], 0.8)
    (0.5, 2)
    """
    if threshold is None:
        return (NAN, 0)
    label, decided, verdict, confidence = _arrays(labels, verdicts, confidences)
    chosen = decided & (confidence >= threshold)
    m = int(chosen.sum())
    return (float((verdict == label)[chosen].mean()) if m else NAN, m)


def confidence_from_trials(trial_verdicts: Sequence[Sequence[bool | None]]) -> list[float]:
    """Per example, the share of its trials that agree with their majority (an abstaining trial
    does not); NaN when no trial decided. The engine's rule (judgekit.judging.verdicts.majority).

    >>> trials = [[True] * 5, [True, True, False, True, None], [True, False], [None, None]]
    >>> confidence_from_trials(trials)
    [1.0, 0.6, 0.5, nan]
    """
    out = []
    for trials in trial_verdicts:
        passed = sum(1 for v in trials if v is True)
        failed = sum(1 for v in trials if v is False)
        out.append(max(passed, failed) / len(trials) if passed + failed else NAN)
    return out


def confidence_from_logprob(logprob_of_answer: float) -> float:
    """The answer token's probability from its log-probability, clipped to [0, 1]; NaN stays NaN.

    >>> round(confidence_from_logprob(-0.105), 3), confidence_from_logprob(0.001)
    (0.9, 1.0)
    >>> confidence_from_logprob(-math.inf)
    0.0
    """
    if math.isnan(logprob_of_answer):
        return NAN
    return min(1.0, max(0.0, math.exp(logprob_of_answer)))
