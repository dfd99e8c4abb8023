"""Early stopping by curtailment: judge a criterion's examples in a seeded random order and stop
as soon as the gate's decision on the whole set can no longer change, whatever the verdicts on
the examples not yet judged.

The gate passes TPR when the lower bound of its 95% Wilson interval is at or above `min_tpr`, and
fails it when the upper bound is below (the estimate itself when `use_lower_bound` is off);
likewise TNR. Judging the rest of a class adds right verdicts, wrong ones or abstentions, and a
Wilson bound falls with each wrong verdict and rises with each right one. So FAIL is settled when
an upper bound would stay below its threshold even if every example left were judged right, and
PASS when both lower bounds would stay at or above theirs even if every example left were judged
wrong. A settled decision is the one the gate takes on the whole set: stopping early saves calls,
it never changes the decision, so it errs exactly as often as the full-set gate. Nothing is
settled before `min_examples` of each class were decided, and PASS is never settled early when
the gate also asks for `min_kappa` (kappa mixes both classes; it is gated on what was judged).

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

import random
from collections.abc import Sequence
from typing import Literal, Protocol

from judgekit.stats.metrics import wilson

Settled = Literal["PASS", "FAIL"]


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
    tpr: tuple[int, int], tnr: tuple[int, int], left: tuple[int, int], thresholds: StopThresholds
) -> Settled | None:
    """The full-set gate's TPR / TNR decision if the examples `left` (known-good, known-bad, not
    yet judged) can no longer change it, else None. `tpr` / `tnr` are (right, decided) so far."""
    t = thresholds
    if min(tpr[1], tnr[1]) < t.min_examples:
        return None
    classes = ((*tpr, left[0], t.min_tpr), (*tnr, left[1], t.min_tnr))
    if any(
        _upper(right + rest, decided + rest, t.use_lower_bound) < threshold
        for right, decided, rest, threshold in classes
    ):
        return "FAIL"
    if t.min_kappa is None and all(
        _lower(right, decided + rest, t.use_lower_bound) >= threshold
        for right, decided, rest, threshold in classes
    ):
        return "PASS"
    return None


def _lower(right: int, decided: int, interval: bool) -> float:
    return wilson(right, decided)[0] if interval else right / decided


def _upper(right: int, decided: int, interval: bool) -> float:
    return wilson(right, decided)[1] if interval else right / decided


def stop_order(n: int, seed: int, criterion_id: str) -> list[int]:
    """The order early stopping judges a criterion's `n` examples in: a permutation of their places
    in the set, drawn from the seed and the criterion's id alone (not from which other criteria ran
    beside it), so the gate can derive it again.

    >>> stop_order(5, 0, "c") == stop_order(5, 0, "c") != stop_order(5, 1, "c")
    True
    """
    return random.Random(f"{seed}:{criterion_id}").sample(range(n), n)


def stopped_at(
    labels: Sequence[bool],
    verdicts: Sequence[bool | None],
    batch: int,
    thresholds: StopThresholds,
) -> tuple[int, Settled | None]:
    """Where early stopping stops, and what it settled: `labels` are every example's, in the order
    judged, `verdicts` the final verdicts of the first ones judged (None: abstained). After each
    batch the decision is asked of `settle`; it stops at the first look that settles, or at the
    end of the set. A stop past the verdicts given is reported as it is: the caller compares.

    >>> from judgekit.inputs.policy import Thresholds
    >>> labels = [True, False] * 50
    >>> stopped_at(labels, [False] * 100, 10, Thresholds(min_examples=5))  # TPR 0: no hope left
    (40, 'FAIL')
    """
    total = len(labels)
    done = right_pos = decided_pos = right_neg = decided_neg = 0
    pos_left, neg_left = sum(labels), total - sum(labels)
    while True:
        end = min(done + batch, total)
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
        decision = settle(
            (right_pos, decided_pos), (right_neg, decided_neg), (pos_left, neg_left), thresholds
        )
        if decision is not None or done >= total or done >= len(verdicts):
            return done, decision
