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
