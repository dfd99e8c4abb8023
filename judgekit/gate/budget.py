"""The label budget (`judgekit plan`): how many known-good and known-bad examples the gate needs to
see a judge clear its thresholds, at the observed rates or at assumed ones.

>>> from judgekit.inputs.labelled import Labelled, LabelledSet
>>> labels = LabelledSet("c", None, "d", tuple(Labelled(str(i), i % 2 == 0, None) for i in range(40)))
>>> plan(None, Policy(), {"c": labels}, ["c"], assume=(0.9, 0.9))[0]
'c known-good: 20 labelled, TPR 0.90 (assumed): 61 needed, 41 more (a judge that is never wrong would need 20)'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from judgekit.inputs.policy import Policy
from judgekit.stats.metrics import examples_for

if TYPE_CHECKING:
    from judgekit.report.model import Report


def plan(report: "Report | None", policy: Policy, sets: Mapping[str, Any], criterion_ids: list[str],
         assume: tuple[float, float] | None = None) -> list[str]:
    """The label budget, one line per criterion and class: how many known-good and known-bad
    examples the gate needs to see the judge clear `min_tpr` / `min_tnr` (and `min_examples`), at
    the observed rates (from the report) or at assumed ones, against what the set on disk holds."""
    lines = []
    for cid in criterion_ids:
        t = policy.for_criterion(cid)
        found = report.criterion(cid) if report else None
        c = found.confusion if found else None
        have_pass = sum(e.label for e in sets[cid].examples)
        have = {"known-good": have_pass, "known-bad": len(sets[cid].examples) - have_pass}
        classes = (("known-good", "TPR", t.min_tpr, (c.tp, c.tp + c.fn) if c else None, assume[0] if assume else None),
                   ("known-bad", "TNR", t.min_tnr, (c.tn, c.tn + c.fp) if c else None, assume[1] if assume else None))
        for word, label, threshold, counts, assumed in classes:
            rate = assumed if assumed is not None else (counts[0] / counts[1] if counts and counts[1] else None)
            perfect = max(examples_for(1.0, threshold) or 0, t.min_examples)
            head = f"{cid} {word}: {have[word]} labelled"
            if rate is None:
                lines.append(f"{head}; no observed {label} yet. Even a judge that is never wrong needs "
                             f"{perfect} {word} examples to show {label} >= {threshold:.2f}")
                continue
            source = "assumed" if assumed is not None else "observed"
            at_rate = examples_for(rate, threshold) if t.use_lower_bound else (1 if rate >= threshold else None)
            if at_rate is None:
                lines.append(f"{head}, {label} {rate:.2f} ({source}) is not above {threshold:.2f}: no number of "
                             "examples will show it clears the threshold; improve the judge")
                continue
            needed = max(at_rate, t.min_examples)
            if needed <= have[word]:
                lines.append(f"{head}, {label} {rate:.2f} ({source}): enough ({needed} needed)")
            else:
                lines.append(f"{head}, {label} {rate:.2f} ({source}): {needed} needed, {needed - have[word]} more "
                             f"(a judge that is never wrong would need {perfect})")
    return lines
