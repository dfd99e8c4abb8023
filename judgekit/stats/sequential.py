"""Early stopping: judge a criterion's examples in a seeded random order, look at the verdicts so
far after each batch, and stop once the gate's decision is reached. Two rules decide when.

**exact** (curtailment): stop as soon as the gate's decision on the whole set can no longer
change, whatever the verdicts on the examples not yet judged. The gate passes TPR when the lower
bound of its 95% Wilson interval is at or above `min_tpr`, and fails it when the upper bound is
below (the estimate itself when `use_lower_bound` is off); likewise TNR. Judging the rest of a
class adds right verdicts, wrong ones or abstentions, and a Wilson bound falls with each wrong
verdict and rises with each right one. So FAIL is settled when an upper bound would stay below its
threshold even if every example left were judged right, and PASS when both lower bounds would stay
at or above theirs even if every example left were judged wrong. A settled decision is the one
the gate takes on the whole set: it never changes the decision, so it errs exactly as often as the
full-set gate, and it saves little on a judge that is merely good (most of the set must be judged
before 20 wrong verdicts could not pull a bound under).

**sequential** (a group-sequential test, Haybittle-Peto boundaries): three interim looks, at a
quarter, half and three quarters of the set, each stopping when the verdicts so far are decisive
on their own: PASS when both classes' Wilson lower bounds at z = 3 (99.73% two-sided) are at or
above their thresholds, FAIL when either upper bound at z = 3 is below. A run no look stopped is
judged to the end and decided there by the gate's rule at a slightly stricter level
(`last_look`): what the interim looks could spend of the gate's error, at a true rate on the
threshold, is given back there, by exact binomial sums, so that each class's chance of a wrong
decision over all looks is no more than the full-set gate's. `benchmarks/early_stopping.py`
measures both rules' wrong decisions against the true rates beside the full-set gate's. An
interim decision is not the one the whole set would get, so the order must not be a choice: it
is drawn from what the examples are (`content_order`: each one's identity and label), not from
a seed, the ids or the file's order, which a second run could change for free.

Nothing is decided before `min_examples` of each class were decided, and PASS is never decided
early when the gate also asks for `min_kappa` (kappa mixes both classes; it is gated on what was
judged), nor by the interim rule when `use_lower_bound` is off.

>>> from judgekit.inputs.policy import Thresholds
>>> t = Thresholds(min_examples=20)
>>> # 20 wrong would still leave 180/200
>>> settle((180, 180), (190, 190), left=(20, 10), thresholds=t)
'PASS'
>>> # eight known-good examples decide nothing
>>> settle((2, 8), (8, 8), left=(192, 192), thresholds=t) is None
True
>>> # even 120 right: 140/200, 95% up to 0.76
>>> settle((20, 80), (30, 30), left=(120, 170), thresholds=t)
'FAIL'
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence
from statistics import NormalDist
from typing import Any, Literal, Protocol

from judgekit.stats.metrics import CONFIDENCE, wilson

Settled = Literal["PASS", "FAIL"]
Rule = Literal["sequential", "exact"]
RULES: tuple[Rule, ...] = ("sequential", "exact")
INTERIM_LOOKS = (1 / 4, 1 / 2, 3 / 4)
INTERIM_Z = 3.0  # Haybittle-Peto
INTERIM_CONFIDENCE = math.erf(INTERIM_Z / math.sqrt(2))  # 0.9973, two-sided
# Above this many decided examples of a class, the last look is found by the normal approximation
# (Bonferroni over the looks) rather than by exact binomial sums.
EXACT_UP_TO = 20_000


class StopThresholds(Protocol):
    """The gate's rule for one criterion, as far as early stopping needs it (judgekit.inputs.policy
    has the real one)."""

    # Read-only: a frozen dataclass (the policy's Thresholds) provides them.
    @property
    def min_tpr(self) -> float: ...
    @property
    def min_tnr(self) -> float: ...
    @property
    def min_kappa(self) -> float | None: ...
    @property
    def min_examples(self) -> int: ...
    @property
    def use_lower_bound(self) -> bool: ...


def settle(
    tpr: tuple[int, int],
    tnr: tuple[int, int],
    left: tuple[int, int],
    thresholds: StopThresholds,
    confidence: float = CONFIDENCE,
) -> Settled | None:
    """The full-set gate's TPR / TNR decision (its Wilson bounds at `confidence`) if the examples
    `left` (known-good, known-bad, not yet judged) can no longer change it, else None. `tpr` /
    `tnr` are (right, decided) so far."""
    t = thresholds
    if min(tpr[1], tnr[1]) < t.min_examples:
        return None
    classes = ((*tpr, left[0], t.min_tpr), (*tnr, left[1], t.min_tnr))
    if any(
        _upper(right + rest, decided + rest, t.use_lower_bound, confidence) < threshold
        for right, decided, rest, threshold in classes
    ):
        return "FAIL"
    if t.min_kappa is None and all(
        _lower(right, decided + rest, t.use_lower_bound, confidence) >= threshold
        for right, decided, rest, threshold in classes
    ):
        return "PASS"
    return None


def interim(
    tpr: tuple[int, int], tnr: tuple[int, int], thresholds: StopThresholds
) -> Settled | None:
    """The sequential rule's decision at an interim look from the verdicts so far alone (`tpr` /
    `tnr` are (right, decided)), else None.

    >>> from judgekit.inputs.policy import Thresholds
    >>> t = Thresholds()
    >>> interim((97, 100), (96, 100), t)  # 99.73% lower bounds 0.87 and 0.85
    'PASS'
    >>> interim((97, 100), (88, 100), t) is None  # TNR's 0.74 to 0.95 holds 0.8
    True
    >>> interim((97, 100), (55, 100), t)  # TNR's upper bound 0.69
    'FAIL'
    """
    t = thresholds
    if min(tpr[1], tnr[1]) < t.min_examples or not t.use_lower_bound:
        return None
    classes = ((tpr, t.min_tpr), (tnr, t.min_tnr))
    bounds = [(wilson(*rate, INTERIM_CONFIDENCE), threshold) for rate, threshold in classes]
    if any(high < threshold for (_, high), threshold in bounds):
        return "FAIL"
    if t.min_kappa is None and all(low >= threshold for (low, _), threshold in bounds):
        return "PASS"
    return None


def last_look(
    labels: Sequence[bool], verdicts: Sequence[bool | None], thresholds: StopThresholds
) -> float:
    """The confidence of the Wilson bounds the gate decides TPR and TNR at, for a run the
    sequential rule judged to the end: `labels` and `verdicts` are every example's, in the order
    judged (None: abstained).

    The interim looks could have stopped the run: each class's chance of crossing an interim
    bound, at a true rate exactly at its threshold, is given back at the last look, which asks for
    as many more right (or wrong) verdicts as it takes for the class's chance of a PASS (or a
    FAIL) over all looks to be no more than the full-set gate's, by exact binomial sums (a class of
    more than `EXACT_UP_TO` decided examples: Bonferroni, z = 3 spending 0.135% a look). It is at
    least the gate's 95%, and one level serves both classes (the stricter).

    >>> from judgekit.inputs.policy import Thresholds
    >>> labels = [True, False] * 100
    >>> round(last_look(labels, [True, False] * 100, Thresholds()), 4)  # z = 2.0003 past 1.96
    0.9545
    """
    t = thresholds
    z = _z_of(CONFIDENCE)
    if not t.use_lower_bound:
        return CONFIDENCE
    looks = sorted(interim_looks(len(labels)))
    for cls, threshold in ((True, t.min_tpr), (False, t.min_tnr)):
        decided = [
            sum(
                1
                for y, v in zip(labels[:at], verdicts[:at], strict=False)
                if y == cls and v is not None
            )
            for at in [*looks, len(labels)]
        ]
        sizes = [n for n in decided[:-1] if n >= t.min_examples]
        if sizes and 0 < threshold < 1 and decided[-1] > 0:
            z = max(z, _last_z(sizes, decided[-1], threshold))
    return math.erf(z / math.sqrt(2))


def _z_of(confidence: float) -> float:
    """z of a two-sided confidence (the Wilson bounds' own)."""
    return NormalDist().inv_cdf((1 + confidence) / 2)


def _last_z(sizes: Sequence[int], total: int, theta: float) -> float:
    """The smallest z at which the last look's Wilson bounds, on `total` decided examples of a
    class, give back what its interim looks (after `sizes` decided) could spend, at a true rate
    `theta`. A Wilson bound is at or past `theta` exactly when the score statistic is (the interval
    inverts the score test): each side's cut is a count, and z is placed just past the score of
    the first count left out."""
    full = _z_of(CONFIDENCE)
    if total > EXACT_UP_TO:
        spent = len(sizes) * (1 - NormalDist().cdf(INTERIM_Z))
        return max(full, NormalDist().inv_cdf(1 - ((1 - CONFIDENCE) / 2 - spent)))
    import numpy as np
    from scipy.stats import binom

    sd = math.sqrt(theta * (1 - theta))

    def scores(n: int) -> Any:
        return (np.arange(n + 1) / n - theta) * math.sqrt(n) / sd

    last_scores = scores(total)
    need = full
    for side in (1, -1):  # PASS: a score at or above z; FAIL: one below -z
        crossed, mass, at = 0.0, np.array([1.0]), 0
        for n in sizes:  # each interim look: the chance of crossing, and what is left
            mass = np.convolve(mass, binom.pmf(np.arange(n - at + 1), n - at, theta))
            at = n
            beyond = scores(n) >= INTERIM_Z if side == 1 else scores(n) < -INTERIM_Z
            crossed += float(mass[beyond].sum())
            mass = np.where(beyond, 0.0, mass)
        last = np.convolve(mass, binom.pmf(np.arange(total - at + 1), total - at, theta))
        gate = last_scores >= full if side == 1 else last_scores < -full
        allowed = float(binom.pmf(np.arange(total + 1), total, theta)[gate].sum())
        # counts from the extreme inwards: the rule's chance if the last look's cut were there
        order = np.arange(total, -1, -1) if side == 1 else np.arange(total + 1)
        kept = int((crossed + np.cumsum(last[order]) <= allowed * (1 + 1e-9)).sum())
        if kept == len(order):
            continue  # any cut would do: the gate's own
        outside = side * last_scores[order[kept]]  # the first count the cut must leave out
        inner = side * last_scores[order[kept - 1]] if kept else outside + 1.0
        # just past it: any z in (outside, inner] cuts there, and the smallest is the most power
        need = max(need, outside + (inner - outside) / 1000)
    return float(need)


def interim_looks(total: int) -> frozenset[int]:
    """The examples judged at the sequential rule's interim looks, in a set of `total`.

    >>> sorted(interim_looks(400))
    [100, 200, 300]
    """
    return frozenset(math.ceil(total * share) for share in INTERIM_LOOKS) - {0, total}


def next_look(done: int, batch: int, total: int, rule: Rule) -> int:
    """Where the next look is, `done` examples judged: a batch on (the exact rule), or the
    sequential rule's next interim look (or the end of the set): it decides nowhere else, so the
    examples up to there are asked at once.

    >>> next_look(90, 16, 400, "sequential"), next_look(90, 16, 400, "exact")
    (100, 106)
    >>> next_look(0, 16, 400, "sequential"), next_look(300, 16, 400, "sequential")
    (100, 400)
    """
    if rule == "sequential":
        return min([total, *(at for at in interim_looks(total) if at > done)])
    return min(done + batch, total)


def decide(
    tpr: tuple[int, int],
    tnr: tuple[int, int],
    left: tuple[int, int],
    thresholds: StopThresholds,
    rule: Rule,
    done: int,
) -> Settled | None:
    """The decision a look after `done` examples reaches under `rule`, or None to judge on: the
    exact rule's (`settle`; `left` is (known-good, known-bad) not yet judged), or, at one of the
    sequential rule's interim looks (`next_look` brings the batches there), the interim one. The
    sequential rule does not curtail: its last look's level depends on the looks before it."""
    if rule == "exact":
        return settle(tpr, tnr, left, thresholds)
    if done in interim_looks(done + sum(left)):
        return interim(tpr, tnr, thresholds)
    return None


def _lower(right: int, decided: int, interval: bool, confidence: float) -> float:
    return wilson(right, decided, confidence)[0] if interval else right / decided


def _upper(right: int, decided: int, interval: bool, confidence: float) -> float:
    return wilson(right, decided, confidence)[1] if interval else right / decided


def stop_order(n: int, seed: int, criterion_id: str) -> list[int]:
    """The order early stopping judges a criterion's `n` examples in: a permutation of their places
    in the set, drawn from the seed and the criterion's id alone (not from which other criteria ran
    beside it), so the gate can derive it again.

    >>> stop_order(5, 0, "c") == stop_order(5, 0, "c") != stop_order(5, 1, "c")
    True
    """
    return random.Random(f"{seed}:{criterion_id}").sample(range(n), n)


def content_order(keys: Sequence[str], criterion_id: str) -> list[int]:
    """The sequential rule's order of a set's examples, by what each is (`keys`: each example's
    identity and label, judgekit.inputs.identity): a keyed hash of each key, so neither the ids,
    nor the file's order, nor a seed draws another order; only other examples do.

    >>> keys = ["x:1", "y:0", "z:1"]
    >>> [keys[i] for i in content_order(keys, "c")] == [
    ...     keys[::-1][i] for i in content_order(keys[::-1], "c")
    ... ]
    True
    """
    rank = [
        hashlib.blake2b(
            f"{criterion_id}\0{key}".encode(), digest_size=8, person=b"judgekit-order"
        ).digest()
        for key in keys
    ]
    return sorted(range(len(keys)), key=lambda i: (rank[i], keys[i]))


def content_seed(keys: Sequence[str]) -> int:
    """A digest of the examples an order was drawn from (whatever their order), recorded as the
    sequential rule's seed: the gate finds the same one, or the set is not the one judged.

    >>> content_seed(["a:1", "b:0"]) == content_seed(["b:0", "a:1"]) != content_seed(["a:1"])
    True
    """
    digest = hashlib.blake2b(
        "\n".join(sorted(keys)).encode(), digest_size=8, person=b"judgekit-order"
    )
    return int.from_bytes(digest.digest(), "big")


def stopped_at(
    labels: Sequence[bool],
    verdicts: Sequence[bool | None],
    batch: int,
    thresholds: StopThresholds,
    rule: Rule = "exact",
) -> tuple[int, Settled | None]:
    """Where early stopping stops, and what it decided: `labels` are every example's, in the order
    judged, `verdicts` the final verdicts of the first ones judged (None: abstained). The looks
    are where `next_look` puts them, each asked of `decide`; it stops at the first look that
    decides, or at the end of the set. A stop past the verdicts given is reported as it is: the
    caller compares. The runner (judgekit.judging.runner) stops by the same two functions.

    >>> from judgekit.inputs.policy import Thresholds
    >>> labels = [True, False] * 50
    >>> stopped_at(labels, [False] * 100, 10, Thresholds(min_examples=5))  # TPR 0: no hope left
    (40, 'FAIL')
    >>> stopped_at(labels, [False] * 100, 10, Thresholds(min_examples=5), "sequential")
    (25, 'FAIL')
    """
    total = len(labels)
    done = right_pos = decided_pos = right_neg = decided_neg = 0
    pos_left, neg_left = sum(labels), total - sum(labels)
    while True:
        end = next_look(done, batch, total, rule)
        # Fewer verdicts than the batch asks for: the stop is reported where they end.
        for label, verdict in zip(labels[done:end], verdicts[done:end], strict=False):
            if label:
                right_pos += verdict is True
                decided_pos += verdict is not None
            else:
                right_neg += verdict is False
                decided_neg += verdict is not None
        for label in labels[done:end]:
            pos_left -= label
            neg_left -= not label
        done = end
        decision = decide(
            (right_pos, decided_pos),
            (right_neg, decided_neg),
            (pos_left, neg_left),
            thresholds,
            rule,
            done,
        )
        if decision is not None or done >= total or done >= len(verdicts):
            return done, decision
