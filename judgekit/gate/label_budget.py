"""The label budget (`judgekit plan`): how many known-good and known-bad examples the gate needs
to see a judge clear its thresholds, at the observed rates or at assumed ones.

>>> from judgekit.inputs.label_reader import Labelled, LabelledSet
>>> labels = LabelledSet(
...     "c", None, "d", tuple(Labelled(str(i), i % 2 == 0, None) for i in range(40))
... )
>>> line = plan(None, Policy(), {"c": labels}, ["c"], assume=(0.9, 0.9))[0]
>>> print(line)  # doctest: +NORMALIZE_WHITESPACE
c known-good: 20 labelled, TPR 0.90 (assumed): 68 needed, 48 more
(a judge that is never wrong would need 20)
>>> b = ClassBudget("known-good", "TPR", 0.8, 30, 0.75, 20, True)
>>> print(b.words())  # doctest: +NORMALIZE_WHITESPACE
at TPR 0.75 (not above 0.80) more known-good examples cannot show it clears 0.80:
improve the judge
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from judgekit.inputs.policy import Policy, Thresholds
from judgekit.stats.metrics import examples_for

if TYPE_CHECKING:
    from judgekit.report.model import Report


# more examples of a class than labelling can be asked for: improve the judge instead
REACHABLE = 5000


@dataclass(frozen=True)
class ClassBudget:
    """How many examples of one class (known-good for TPR, known-bad for TNR) the gate needs to see
    a judge with `rate` clear `threshold`: the one rule and the one wording the gate and `plan`
    use."""

    word: str  # known-good / known-bad
    label: str  # TPR / TNR
    threshold: float
    have: int  # labelled examples of the class
    rate: float | None  # observed or assumed; None: not known yet
    min_examples: int
    use_lower_bound: bool

    @property
    def needed(self) -> int | None:
        """Examples of the class needed in all; None when no number reachable by labelling would
        do."""
        if self.rate is None:
            return None
        if self.use_lower_bound:
            at_rate = examples_for(self.rate, self.threshold)
        else:
            at_rate = 1 if self.rate >= self.threshold else None
        if at_rate is None or at_rate - self.have > REACHABLE:
            return None
        return max(at_rate, self.min_examples)

    @property
    def more(self) -> int | None:
        needed = self.needed
        return None if needed is None else max(0, needed - self.have)

    def words(self) -> str:
        """What labelling can and cannot do for this class, in one clause."""
        more = self.more
        if more is not None:
            return (
                f"about {more} more {self.word} examples would settle it"
                if more
                else "enough examples"
            )
        if self.rate is not None and self.rate <= self.threshold:
            return (
                f"at {self.label} {self.rate:.2f} (not above {self.threshold:.2f}) more "
                f"{self.word} examples cannot show it clears {self.threshold:.2f}: "
                "improve the judge"
            )
        return (
            f"not reachable by labelling (more than {REACHABLE:,} more {self.word} examples): "
            "improve the judge"
        )


def budgets(
    t: Thresholds, have: tuple[int, int], rates: tuple[float | None, float | None]
) -> tuple[ClassBudget, ClassBudget]:
    """The known-good (TPR) and known-bad (TNR) budgets under thresholds `t`."""
    return (
        ClassBudget(
            "known-good", "TPR", t.min_tpr, have[0], rates[0], t.min_examples, t.use_lower_bound
        ),
        ClassBudget(
            "known-bad", "TNR", t.min_tnr, have[1], rates[1], t.min_examples, t.use_lower_bound
        ),
    )


def _observed(found: Any) -> tuple[float | None, float | None]:
    """A report entry's TPR and TNR (weighted when its examples were drawn by design); None
    unknown."""
    if found is None:
        return None, None
    return found.metrics.get("tpr"), found.metrics.get("tnr")


def short_class(found: Any, t: Thresholds, have: tuple[int, int]) -> tuple[str, str]:
    """The rate whose interval decides the gate and the labels to shrink it with (tpr or tnr), and
    why, in words: the class `plan` says needs more examples (most of them), else the rate whose
    lower bound is nearest below (or least above) its threshold, else the class with fewer
    labels."""
    rates = _observed(found)
    chosen = budgets(t, have, rates)
    if found is None or None in rates:
        b = chosen[0] if have[0] < have[1] else chosen[1]
        return (
            "tpr" if b is chosen[0] else "tnr"
        ), f"{b.word} is the class with fewer labels ({b.have})"
    more = [
        b.more
        if b.more is not None
        else (REACHABLE if b.rate is not None and b.rate <= b.threshold else 0)
        for b in chosen
    ]
    if max(more) > 0:
        i = 0 if more[0] >= more[1] else 1
        b = chosen[i]
        return ("tpr", "tnr")[
            i
        ], f"{b.word}: {b.have} labelled, {b.label} {b.rate:.2f}; {b.words()}"
    lows = [(found.intervals.get(k) or (None, None))[0] for k in ("tpr", "tnr")]
    gaps = [
        (low if low is not None else 0.0) - b.threshold for low, b in zip(lows, chosen, strict=True)
    ]
    i = 0 if gaps[0] <= gaps[1] else 1
    b = chosen[i]
    return ("tpr", "tnr")[i], (
        f"both classes settle the gate now; {b.label}'s lower bound {lows[i] or 0:.2f} is the "
        f"nearer to its threshold {b.threshold:.2f}"
    )


def plan(
    report: Report | None,
    policy: Policy,
    sets: Mapping[str, Any],
    criterion_ids: list[str],
    assume: tuple[float, float] | None = None,
) -> list[str]:
    """The label budget, one line per criterion and class: how many known-good and known-bad
    examples the gate needs to see the judge clear `min_tpr` / `min_tnr` (and `min_examples`), at
    the observed rates (from the report) or at assumed ones, against what the set on disk holds."""
    lines = []
    for cid in criterion_ids:
        t = policy.for_criterion(cid)
        found = report.criterion(cid) if report else None
        have_pass = sum(e.label for e in sets[cid].examples)
        have = (have_pass, len(sets[cid].examples) - have_pass)
        observed = _observed(found)
        rates = assume if assume is not None else observed
        for b in budgets(t, have, rates):
            perfect = max(examples_for(1.0, b.threshold) or 0, t.min_examples)
            head = f"{cid} {b.word}: {b.have} labelled"
            if b.rate is None:
                lines.append(
                    f"{head}; no observed {b.label} yet. Even a judge that is never wrong needs "
                    f"{perfect} {b.word} examples to show {b.label} >= {b.threshold:.2f}"
                )
                continue
            source = "assumed" if assume is not None else "observed"
            if b.needed is None:
                lines.append(f"{head}, {b.label} {b.rate:.2f} ({source}): {b.words()}")
            elif b.more == 0:
                lines.append(
                    f"{head}, {b.label} {b.rate:.2f} ({source}): enough ({b.needed} needed)"
                )
            else:
                lines.append(
                    f"{head}, {b.label} {b.rate:.2f} ({source}): {b.needed} needed, {b.more} more "
                    f"(a judge that is never wrong would need {perfect})"
                )
    return lines
