"""The gate's rules on recomputed figures: a threshold on a rate (applied to its 95% interval's
lower bound by default), and the decision on a selectively judged criterion's certificate.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgekit.errors import InputError
from judgekit.gate.evidence import Figures
from judgekit.gate.result import Decision
from judgekit.inputs.files import read_yaml
from judgekit.inputs.label_reader import source_of
from judgekit.inputs.policy import Selective, Thresholds
from judgekit.judging.selective import certificate, given
from judgekit.llm.families import family, same_model
from judgekit.report.render import fmt_number
from judgekit.stats.metrics import CONFIDENCE, ratio, wilson
from judgekit.stats.selective import Cascade


@dataclass(frozen=True)
class Findings:
    """What the rules found against a criterion: why it fails, and what more labels could settle."""

    fails: list[str] = field(default_factory=list)
    unsure: list[str] = field(default_factory=list)


def bounds_of(t: Thresholds, confidence: float = CONFIDENCE) -> float | None:
    """The confidence of the bounds `check` holds against the thresholds (None: the estimates)."""
    return confidence if t.use_lower_bound else None


def check(
    figures: dict[str, Any],
    intervals: dict[str, Any],
    key: str,
    label: str,
    threshold: float,
    found: Findings,
    bounds: float | None = CONFIDENCE,
) -> bool:
    """Check one figure against its threshold: its interval's bounds, at confidence `bounds` (None:
    the estimate itself, `use_lower_bound` off); True when more examples could settle it."""
    lower = bounds is not None
    level = f"{round((bounds or CONFIDENCE) * 100, 1):g}%"
    value = figures.get(key)
    low, high = intervals.get(key, (None, None)) if key in intervals else (value, value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        found.fails.append(
            f"{label} is undefined (no decided example of that class), and the gate fails on it"
        )
        return False
    if not lower:
        if value < threshold:
            found.fails.append(f"{label} {value:.2f} < {threshold:.2f}")
        return False
    if low is not None and low >= threshold:
        return False
    if high is not None and high < threshold:
        found.fails.append(
            f"{label} {value:.2f} ({level} interval {fmt_number(low, 2)}-{fmt_number(high, 2)}) "
            f"is below {threshold:.2f}"
        )
        return False
    found.unsure.append(
        f"{label} {value:.2f} but its {level} interval {fmt_number(low, 2)}-{fmt_number(high, 2)} "
        f"straddles {threshold:.2f}"
    )
    return True


def selective(
    criterion_id: str, figures: Figures, t: Thresholds, s: Selective, criterion_path: Path
) -> Decision:
    """A selectively judged criterion: PASS when a confidence threshold is certified (for the
    cascade, when the criterion escalates) and the verdicts given cover at least min_coverage."""
    unfit = _unfit(criterion_id, figures, t, criterion_path)
    if unfit is not None:
        return unfit
    stages = figures.stages
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
    found = Findings()
    _check_given(tp, fp, tn, fn, t, found)
    _check_coverage(cascade, said, t, s, found)
    if found.fails:
        return Decision(criterion_id, "FAIL", tuple(found.fails + found.unsure))
    if found.unsure:
        return Decision(criterion_id, "INCONCLUSIVE", tuple(found.unsure))
    # The judge's errors where it gives verdicts: what counted pass rates are corrected with
    # (tally).
    return Decision(
        criterion_id, "PASS", (said,), thresholds=thresholds, confusion=(tp, fp, tn, fn)
    )


def _unfit(
    criterion_id: str, figures: Figures, t: Thresholds, criterion_path: Path
) -> Decision | None:
    """The decision when the examples cannot carry a certificate at all (None when they can)."""
    n_pass, n_fail = figures.evidence()
    # its bound counts examples as a random sample: drawn by verdict, they are not
    if figures.drawn:
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
                f"too few labelled examples: {n_pass} known-good and {n_fail} known-bad, "
                f"at least {t.min_examples} of each needed",
            ),
        )
    if len(figures.stages) > 1 and _escalates_to(criterion_path) is None:
        return Decision(
            criterion_id,
            "FAIL",
            (
                f"the report holds verdicts of a judge escalated to, but "
                f"criteria/{criterion_id}.yaml names no judge.escalate_to; run "
                "`judgekit calibrate` again",
            ),
        )
    return None


def _check_given(tp: int, fp: int, tn: int, fn: int, t: Thresholds, found: Findings) -> None:
    """Each class, on the verdicts the cascade gives, against its threshold."""
    for cls, count in (("known-good", tp + fn), ("known-bad", tn + fp)):
        if count == 0:
            found.fails.append(
                f"no {cls} example gets a verdict (every one is escalated), so nothing shows "
                "the judge tells the classes apart"
            )
    if found.fails:
        return
    rates = {"tpr": ratio(tp, tp + fn), "tnr": ratio(tn, tn + fp)}
    intervals = {"tpr": wilson(tp, tp + fn), "tnr": wilson(tn, tn + fp)}
    for key, label, threshold in (("tpr", "TPR", t.min_tpr), ("tnr", "TNR", t.min_tnr)):
        check(
            rates,
            intervals,
            key,
            f"{label} on the verdicts given",
            threshold,
            found,
            bounds_of(t),
        )


def _check_coverage(
    cascade: Cascade, said: str, t: Thresholds, s: Selective, found: Findings
) -> None:
    """The share of examples the cascade gives a verdict on, against min_coverage."""
    low, high = cascade.coverage_interval
    wanted = f"min_coverage {s.min_coverage:.0%}"
    if (
        not t.use_lower_bound
        and cascade.coverage < s.min_coverage
        or t.use_lower_bound
        and high < s.min_coverage
    ):
        found.fails.append(f"{said}: below {wanted}")
    elif t.use_lower_bound and low < s.min_coverage:
        found.unsure.append(f"{said}: its interval straddles {wanted}")


def judge_setting(path: Path, *keys: str) -> str | None:
    """A setting under `judge:` of a criterion file, read plainly (None when absent or the file does
    not parse)."""
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


def label_sources(
    made_by: Iterable[str | None], t: Thresholds, judge_model: str | None
) -> str | None:
    """Why labels made so (each label's `made_by`) are not ground truth for this judge (None when
    they are): labels made in a way the policy does not count (label_sources), or by a model of
    the judge's family (a judge agreeing with labels its own family made proves nothing). A
    yes/no set's and a pairwise set's labels alike."""
    made = Counter(m for m in made_by if source_of(m) != "human")
    own = sorted(
        m
        for m in made
        if m
        and m.startswith("model:")
        and judge_model
        and (same_model(m[6:], judge_model) or family(m[6:]) == family(judge_model))
    )
    if own:
        return (
            f"{sum(made[m] for m in own)} labels of the set were made by {', '.join(own)}, the "
            f"judge's own model family ({judge_model}): a judge agreeing with labels its own "
            "family made proves nothing; have people label them (`judgekit label`)"
        )
    refused = {m: n for m, n in made.items() if source_of(m) not in t.label_sources}
    if not refused:
        return None
    said = ", ".join(f"{n} by {m}" for m, n in sorted(refused.items(), key=lambda x: str(x[0])))
    return (
        f"labels the gate does not count as ground truth: {said} (it counts "
        f"{' and '.join(t.label_sources)} labels); have people label them (`judgekit label`), or "
        "allow them in the gate's policy (label_sources)"
    )
