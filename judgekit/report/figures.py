"""Report parts computed from verdicts beside the main figures: the judge's consistency over
trials, the annotators' agreement, agreement per tag, and a claims check's two stages.
"""

from __future__ import annotations

from judgekit.inputs.sets import CalibrationSet
from judgekit.judging.claims import stages
from judgekit.judging.verdicts import Verdict
from judgekit.report.model import Annotators, ClaimStages, ConfusionCounts, Consistency, Slice
from judgekit.report.render import finite
from judgekit.stats.metrics import confusion, kappa_from_counts, pairwise_kappa, ratio
from judgekit.stats.raters import fleiss_kappa, flip_rate, item_stability, krippendorff_alpha


def consistency(all_trials: list[list[Verdict]]) -> Consistency | None:
    count = max((len(t) for t in all_trials), default=1)
    if count < 2:
        return None
    unstable = [t for t in all_trials if len({v.passed for v in t if v.passed is not None}) > 1]
    complete = [
        [v.passed for v in t]
        for t in all_trials
        if len(t) == count and all(v.passed is not None for v in t)
    ]
    stability = dict(
        zip(
            (t[0].example_id for t in unstable),
            item_stability([[v.passed for v in t] for t in unstable]),
        )
    )
    return Consistency(
        trials=count,
        flip_rate=finite(flip_rate([[v.passed for v in t] for t in all_trials])),
        fleiss_kappa=finite(fleiss_kappa(complete)) if complete else None,
        unstable=[t[0].example_id for t in unstable],
        stability=stability,
    )


def annotators(cal: CalibrationSet, final: list[Verdict]) -> Annotators | None:
    ratings: dict[str, dict[str, bool]] = {}
    for example in cal.examples:
        for name, label in (example.labels or {}).items():
            ratings.setdefault(name, {})[example.id] = label
    if len(ratings) < 2:
        return None
    judge = {v.example_id: v.passed for v in final if v.passed is not None}
    judge_kappa = {
        name: pairwise_kappa({"a": own, "b": judge})["a~b"] for name, own in ratings.items()
    }
    names = sorted(ratings)
    rows = [[ratings[name].get(e.id) for name in names] for e in cal.examples]
    full = [row for row in rows if None not in row]
    return Annotators(
        pairwise_kappa={k: finite(v) for k, v in pairwise_kappa(ratings).items()},
        judge_kappa={k: finite(v) for k, v in judge_kappa.items()},
        fleiss_kappa=finite(fleiss_kappa(full)) if full else None,
        krippendorff_alpha=finite(krippendorff_alpha(rows)),
        examples=sum(1 for row in rows if len(row) - row.count(None) >= 2),
    )


def slices(cal: CalibrationSet, final: list[Verdict]) -> dict[str, Slice]:
    """Metrics per tag (point estimates; a slice is for finding where the judge goes wrong)."""
    by_tag: dict[str, list[tuple[bool, bool | None]]] = {}
    for example, verdict in zip(cal.examples, final):
        for tag in example.tags:
            by_tag.setdefault(tag, []).append((example.label, verdict.passed))
    out = {}
    for tag, pairs in sorted(by_tag.items()):
        c, abstained = confusion([p[0] for p in pairs], [p[1] for p in pairs])
        out[tag] = Slice(
            n=len(pairs),
            abstained=abstained,
            tpr=finite(ratio(c.tp, c.tp + c.fn)),
            tnr=finite(ratio(c.tn, c.tn + c.fp)),
            accuracy=finite(ratio(c.tp + c.tn, c.decided)),
            cohen_kappa=finite(kappa_from_counts(c.tp, c.fp, c.tn, c.fn)),
        )
    return out


def claim_stages(
    cal: CalibrationSet, final: list[Verdict], gold: dict[str, Verdict]
) -> ClaimStages:
    s = stages(cal.examples, final, gold)
    return ClaimStages(
        examples=s.examples,
        claims=s.claims,
        verification=ConfusionCounts(tp=s.tp, fp=s.fp, tn=s.tn, fn=s.fn),
        verification_tpr=finite(ratio(s.tp, s.tp + s.fn)),
        verification_tnr=finite(ratio(s.tn, s.tn + s.fp)),
        extraction_errors=s.extraction_errors,
        verification_errors=s.verification_errors,
        unreadable=s.unreadable,
    )
