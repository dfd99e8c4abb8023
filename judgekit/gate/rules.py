"""The gate's rules on recomputed figures: a threshold on a rate (applied to its 95% interval's
lower bound by default), and the decision on a selectively judged criterion's certificate.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from judgekit.errors import InputError
from judgekit.gate.evidence import Figures
from judgekit.gate.result import Decision
from judgekit.inputs.files import read_yaml
from judgekit.inputs.policy import Selective, Thresholds
from judgekit.judging.selective import certificate, given
from judgekit.report.render import fmt_number
from judgekit.stats.metrics import ratio, wilson


def check(
    figures: dict[str, Any],
    intervals: dict[str, Any],
    key: str,
    label: str,
    threshold: float,
    lower: bool,
    fails: list[str],
    unsure: list[str],
) -> bool:
    """Check one figure against its threshold; True when more examples could settle it."""
    value = figures.get(key)
    low, high = intervals.get(key, (None, None)) if key in intervals else (value, value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        fails.append(
            f"{label} is undefined (no decided example of that class), and the gate fails on it"
        )
        return False
    if not lower:
        if value < threshold:
            fails.append(f"{label} {value:.2f} < {threshold:.2f}")
        return False
    if low is not None and low >= threshold:
        return False
    if high is not None and high < threshold:
        fails.append(
            f"{label} {value:.2f} (95% interval {fmt_number(low, 2)}-{fmt_number(high, 2)}) is below "
            f"{threshold:.2f}"
        )
        return False
    unsure.append(
        f"{label} {value:.2f} but its 95% interval {fmt_number(low, 2)}-{fmt_number(high, 2)} straddles "
        f"{threshold:.2f}"
    )
    return True


def selective(
    criterion_id: str, figures: Figures, t: Thresholds, s: Selective, criterion_path: Path
) -> Decision:
    """A selectively judged criterion: PASS when a confidence threshold is certified (for the
    cascade, when the criterion escalates) and the verdicts given cover at least min_coverage."""
    n_pass, n_fail = figures.labelled_pass, figures.labelled_fail
    if (
        figures.drawn
    ):  # its bound counts examples as a random sample: drawn by verdict, they are not
        return Decision(
            criterion_id,
            "FAIL",
            (
                "selective judging's certificate counts every example alike, and "
                "some of this set's were drawn by the judge's verdict (`judgekit "
                "label --next`); certify on examples labelled at random",
            ),
        )
    if n_pass < t.min_examples or n_fail < t.min_examples:
        return Decision(
            criterion_id,
            "INCONCLUSIVE",
            (
                f"too few labelled examples: {n_pass} known-good and {n_fail} known-bad, at least {t.min_examples} "
                "of each needed",
            ),
        )
    stages = figures.stages
    if len(stages) > 1 and _escalates_to(criterion_path) is None:
        return Decision(
            criterion_id,
            "FAIL",
            (
                f"the report holds verdicts of a judge escalated to, but "
                f"criteria/{criterion_id}.yaml names no judge.escalate_to; run "
                "`judgekit calibrate` again",
            ),
        )
    cascade = certificate(figures.labels, stages, s)
    if cascade is None:
        return Decision(
            criterion_id,
            "FAIL",
            (
                "selective judging needs a confidence with every verdict, and the "
                "report's verdicts lack one; give the judge trials: 3 or more (or a "
                "provider that returns log-probabilities) and calibrate again",
            ),
        )
    said = cascade.words()
    if not cascade.certified:
        return Decision(
            criterion_id, "FAIL", (said + "; label more examples, or use a stronger judge",)
        )
    thresholds = tuple(stage.threshold for stage in cascade.stages)
    # Agreement alone is ruled by the larger class (a judge that passes everything agrees on a set
    # of mostly good replies): on the verdicts it gives, each class must clear its threshold too.
    tp, fp, tn, fn = (
        sum(cells) for cells in zip(*given(figures.labels, stages, cascade), strict=True)
    )
    fails, unsure = [], []
    for cls, count in (("known-good", tp + fn), ("known-bad", tn + fp)):
        if count == 0:
            fails.append(
                f"no {cls} example gets a verdict (every one is escalated), so nothing shows the judge "
                "tells the classes apart"
            )
    if not fails:
        rates = {"tpr": ratio(tp, tp + fn), "tnr": ratio(tn, tn + fp)}
        intervals = {"tpr": wilson(tp, tp + fn), "tnr": wilson(tn, tn + fp)}
        for key, label, threshold in (("tpr", "TPR", t.min_tpr), ("tnr", "TNR", t.min_tnr)):
            check(
                rates,
                intervals,
                key,
                f"{label} on the verdicts given",
                threshold,
                t.use_lower_bound,
                fails,
                unsure,
            )
    low, high = cascade.coverage_interval
    wanted = f"min_coverage {s.min_coverage:.0%}"
    if (
        not t.use_lower_bound
        and cascade.coverage < s.min_coverage
        or t.use_lower_bound
        and high < s.min_coverage
    ):
        fails.append(f"{said}: below {wanted}")
    elif t.use_lower_bound and low < s.min_coverage:
        unsure.append(f"{said}: its interval straddles {wanted}")
    if fails:
        return Decision(criterion_id, "FAIL", tuple(fails + unsure))
    if unsure:
        return Decision(criterion_id, "INCONCLUSIVE", tuple(unsure))
    # The judge's errors where it gives verdicts: what counted pass rates are corrected with (tally).
    return Decision(
        criterion_id, "PASS", (said,), thresholds=thresholds, confusion=(tp, fp, tn, fn)
    )


def judge_setting(path: Path, *keys: str) -> str | None:
    """A setting under `judge:` of a criterion file, read plainly (None when absent or the file does not parse)."""
    try:
        data = read_yaml(path)
    except InputError:
        return None
    value = data.get("judge") if isinstance(data, dict) else None
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, str) else None


def _escalates_to(path: Path) -> str | None:
    """The model of the judge.escalate_to a criterion file names (selective judging)."""
    return judge_setting(path, "escalate_to", "model")
