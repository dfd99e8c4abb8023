"""The gate's evidence: a report's figures recomputed from the per-example verdicts beside it
(`verdicts.jsonl`) and the labels of the calibration set on disk.

A report is a cache of evidence, not the evidence. The gate decides only on the figures
recomputed here, and refuses a report whose stored figures disagree with them (a number typed
into report.json, a confusion matrix that does not add up, intervals removed), whose verdicts do
not match the set (an id the set lacks, a verdict missing, a trial twice), or whose times lie in
the future.

>>> from judgekit.inputs.label_reader import Labelled, LabelledSet
>>> labels = LabelledSet("c", None, "d", (Labelled("a", True, None), Labelled("b", False, None)))
>>> lines = [Line("c", "a", 0, True, None), Line("c", "b", 0, True, None)]
>>> f = recompute(None, lines, labels)
>>> f.confusion, f.rates()["tpr"], f.rates()["tnr"]
((1, 1, 0, 0), 1.0, 0.0)
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any, cast

from judgekit.errors import InputError
from judgekit.inputs.catalog import CriterionFile
from judgekit.inputs.label_reader import Labelled, LabelledSet
from judgekit.judging.probes import PROBES, ProbeCount, count_flips, directions, probed
from judgekit.judging.verdicts import Verdict, majority
from judgekit.lazy import exports
from judgekit.report.reading import Line, ReportEntry, Untrusted
from judgekit.stats.allocation import verify_design
from judgekit.stats.design import (
    PoolFigures,
    by_pool,
    design_calibration,
    weighted_cells,
    weights,
)
from judgekit.stats.drawn import DesignError, Drawn
from judgekit.stats.metrics import (
    CONFIDENCE,
    Calibration,
    confusion,
    kappa_from_counts,
    kappa_interval,
    ratio,
    wilson,
)
from judgekit.stats.raters import flip_rate
from judgekit.stats.sequential import (
    StopThresholds,
    content_order,
    content_seed,
    last_look,
    stop_order,
    stopped_at,
)

# The models load only when a report stopped by the sequential rule: the gate's fast path starts
# without pydantic.
_heavy, _ = exports(
    "judgekit.gate.evidence",
    {
        "read_set": "judgekit.inputs.sets",
        "load_criterion": "judgekit.inputs.criteria",
        "order_keys": "judgekit.inputs.identity",
    },
)

CLOCK_SKEW = timedelta(minutes=5)  # a time this far ahead of the gate's clock is in the future
TOLERANCE = 1e-9


@dataclass(frozen=True)
class Figures:
    """What the verdicts and the labels on disk show about one criterion's judge."""

    n: int
    abstained: int
    confusion: tuple[int, int, int, int]  # tp, fp, tn, fn
    labelled_pass: int
    labelled_fail: int
    trials: int
    flip_rate: float | None
    evidence_at: datetime | None
    # (label, verdict) of each decided example: kappa's interval
    decided: tuple[tuple[bool, bool], ...]
    labels: tuple[bool, ...] = ()  # of the examples judged, in the set's order
    # each judge's final verdicts on them (selective judging)
    stages: tuple[tuple[Verdict, ...], ...] = ()
    # how each was drawn (`judgekit label --next`), in the order of `labels`; empty: none by design
    drawn: tuple[Drawn | None, ...] = ()
    # The level TPR and TNR are decided at: the gate's, or the last look's of a run stopped by the
    # sequential rule to the end (judgekit.stats.sequential.last_look).
    confidence: float = CONFIDENCE
    # Each probe's flips in each direction (judgekit.judging.probes): the ones asked for first.
    probes: tuple[ProbeCount, ...] = ()
    # Known-good and known-bad replies each counted once (drawn repeats of one reply are one
    # piece of evidence): what min_examples counts. None: as labelled.
    distinct: tuple[int, int] | None = None

    def evidence(self) -> tuple[int, int]:
        """Known-good and known-bad replies, each counted once."""
        return self.distinct or (self.labelled_pass, self.labelled_fail)

    def cells(self) -> tuple[float, float, float, float]:
        """tp, fp, tn, fn: counted, or weighted by how the examples were drawn
        (judgekit.stats.design)."""
        if not self.drawn:
            return self.confusion
        return weighted_cells(self.labels, [v.passed for v in self.stages[0]], weights(self.drawn))

    def counts(self) -> tuple[int, int, int, int]:
        """The cells as whole counts, for a pass rate's correction (weighted ones rounded)."""
        tp, fp, tn, fn = self.cells()
        return round(tp), round(fp), round(tn), round(fn)

    def pools(self) -> dict[str, PoolFigures]:
        """Each pool's own figures (its drawn examples, weighted within it)."""
        return (
            by_pool(self.labels, [v.passed for v in self.stages[0]], self.drawn)
            if self.drawn
            else {}
        )

    def rates(self) -> dict[str, float]:
        tp, fp, tn, fn = self.cells()
        if self.drawn:  # a pool's own TPR and TNR, as the report's (judgekit.stats.unbiased)
            found = self._weighted.metrics
            return {
                "tpr": found["tpr"],
                "tnr": found["tnr"],
                "cohen_kappa": kappa_from_counts(tp, fp, tn, fn),
            }
        return {
            "tpr": ratio(tp, tp + fn),
            "tnr": ratio(tn, tn + fp),
            "cohen_kappa": kappa_from_counts(tp, fp, tn, fn),
        }

    @cached_property
    def _weighted(self) -> Calibration:
        """The weighted figures of a set drawn by design: verified, then decided on, computed
        once."""
        return design_calibration(self.labels, [v.passed for v in self.stages[0]], self.drawn)

    def intervals(
        self, with_kappa: bool, confidence: float = CONFIDENCE
    ) -> dict[str, tuple[float, float]]:
        if self.drawn:  # seeded draws of the weighted posterior, as the report's (seed 0)
            found = self._weighted.intervals
            return {
                k: found[k]
                for k in (("tpr", "tnr", "cohen_kappa") if with_kappa else ("tpr", "tnr"))
            }
        tp, fp, tn, fn = self.confusion
        out = {"tpr": wilson(tp, tp + fn, confidence), "tnr": wilson(tn, tn + fp, confidence)}
        if with_kappa:  # numpy, imported by kappa_interval: only when the policy asks for kappa
            out["cohen_kappa"] = kappa_interval(
                [d[0] for d in self.decided], [d[1] for d in self.decided]
            )
        return out


@dataclass(frozen=True)
class Probing:
    """What the gate asks of a criterion's probe verdicts: the probes whose verdicts must be there
    (judgekit.judging.probes.probes_for, of the criterion on disk) and its kind, which says the
    directions its replies are pushed in (`directions`)."""

    required: tuple[str, ...] = ()
    kind: str = "llm"


def recompute(
    entry: ReportEntry | None,
    lines: Sequence[Line],
    labels: LabelledSet,
    stopping: StopThresholds | None = None,
    probing: Probing = Probing(),
    criterion: CriterionFile | None = None,
) -> Figures:
    """The figures of an entry from its verdicts and the labels (already narrowed to its split).
    An entry that stopped early must hold the verdicts early stopping under `stopping` (the gate's
    thresholds) would have asked for, and the verdicts on probes' rewrites those `probing` asks
    for: no field of the report waives a missing verdict."""
    # Per example of the set: None (no verdict yet), its one line, or a list of its trials' lines. A
    # million examples are mostly judged once: a line each, not a list or a dict by trial.
    trials: dict[str, Line | list[Line] | None] = dict.fromkeys(e.id for e in labels.examples)
    escalated = _by_example(
        [line for line in lines if line.stage == 1 and line.probe is None], trials
    )
    rewrites = [line for line in lines if line.probe is not None]
    for line in (line for line in lines if line.stage == 0 and line.probe is None):
        if line.id not in trials:
            raise Untrusted(
                f"a verdict for id {line.id!r}, which the calibration set does not hold"
            )
        mine = trials[line.id]
        if mine is None:
            trials[line.id] = line
        elif any(
            other.trial == line.trial for other in (mine if isinstance(mine, list) else (mine,))
        ):
            raise Untrusted(f"two verdicts for id {line.id!r} trial {line.trial}")
        elif isinstance(mine, list):
            mine.append(line)
        else:
            trials[line.id] = [mine, line]
    judged = [e for e in labels.examples if trials[e.id] is not None]
    stopped = entry.early_stop_judged if entry is not None else None
    expected = stopped if stopped is not None else len(labels.examples)
    if len(judged) != expected:
        missing = next((e.id for e in labels.examples if trials[e.id] is None), None)
        raise Untrusted(
            f"{len(judged)} of the set's {len(labels.examples)} examples have verdicts, "
            f"not {expected}"
            + (f" (none for id {missing!r})" if missing and stopped is None else "")
        )
    for e in judged:  # each example's trials in order
        if isinstance(held := trials[e.id], list):
            held.sort(key=_trial)

    def each(e: Labelled) -> list[Line] | tuple[Line]:
        held = trials[e.id]
        if held is None:  # `judged` holds only examples with a verdict: never met
            raise Untrusted(f"no verdict for id {e.id!r}")
        return held if isinstance(held, list) else (held,)

    verdicts = [
        Verdict(e.id, held.passed, confidence=held.confidence)
        if isinstance(held := trials[e.id], Line)  # one trial: its majority is itself
        else majority([Verdict(e.id, v.passed, confidence=v.confidence) for v in each(e)])
        for e in judged
    ]
    confidence = CONFIDENCE
    if stopped is not None and entry is not None:
        confidence = _check_stop(
            entry, labels, {v.example_id: v.passed for v in verdicts}, stopping, criterion
        )
    final = [v.passed for v in verdicts]
    cells, abstained = confusion([e.label for e in judged], final)
    # a rewrite's verdict is evidence as old as it is, as any other (max_age, a recheck's finding)
    times = [v.at for e in judged for v in each(e)] + [line.at for line in rewrites]
    count = max((len(each(e)) for e in judged), default=1)
    flips = flip_rate([[v.passed for v in each(e)] for e in judged]) if count > 1 else None
    labelled_pass = sum(e.label for e in labels.examples)
    return Figures(
        n=len(judged),
        abstained=abstained,
        confusion=(cells.tp, cells.fp, cells.tn, cells.fn),
        labelled_pass=labelled_pass,
        labelled_fail=len(labels.examples) - labelled_pass,
        distinct=labels.distinct() if labels.repeated else None,
        trials=count,
        flip_rate=None if flips is None or math.isnan(flips) else flips,
        # `None in times` is ruled out before min() runs: every time is a datetime there.
        evidence_at=None if not times or None in times else min(cast("list[datetime]", times)),
        decided=tuple(
            _PAIRS[e.label, v] for e, v in zip(judged, final, strict=True) if v is not None
        ),
        labels=tuple(e.label for e in judged),
        drawn=tuple(Drawn(*e.selection) if e.selection else None for e in judged)
        if any(e.selection for e in judged)
        else (),
        stages=(tuple(verdicts),)
        + ((tuple(escalated.get(e.id, Verdict(e.id, None)) for e in judged),) if escalated else ()),
        confidence=confidence,
        probes=_probe_counts(
            rewrites, judged, final, probing, {e.id: len(each(e)) for e in judged}
        ),
    )


def _probe_counts(
    rewrites: Sequence[Line],
    judged: Sequence[Labelled],
    final: Sequence[bool | None],
    probing: Probing,
    trials: Mapping[str, int],
) -> tuple[ProbeCount, ...]:
    """Each probe's flips in each direction, counted from its verdicts as `calibrate` counts them
    (judgekit.judging.probes.count_flips); Untrusted unless every probe asked for, and any other
    probe the file holds, has a verdict on each reply the judge got right, and on no other, by the
    criterion's judge (stage 0), in as many trials as the reply itself (`trials`)."""
    labelled = [(e.id, e.label, v) for e, v in zip(judged, final, strict=True)]
    ids = probed(probing.kind, labelled)
    wanted = set(ids)
    label = {e.id: e.label for e in judged}
    by_probe: dict[str, dict[str, list[Line]]] = defaultdict(lambda: defaultdict(list))
    for line in rewrites:
        if line.stage != 0:
            raise Untrusted(f"a verdict of probe {line.probe!r} by a judge escalated to")
        if line.probe not in PROBES:
            raise Untrusted(f"a verdict of probe {line.probe!r}, which judgekit does not have")
        if line.id not in wanted:
            raise Untrusted(
                f"a verdict of probe {line.probe} on id {line.id!r}, which is not a reply the "
                "judge got right (nothing there to buy)"
            )
        held = by_probe[line.probe][line.id]
        if any(other.trial == line.trial for other in held):
            raise Untrusted(f"two verdicts of probe {line.probe} for id {line.id!r}")
        held.append(line)
    out = []
    for name in (*probing.required, *sorted(set(by_probe) - set(probing.required))):
        held_by_id = by_probe.get(name, {})
        missing = next((rid for rid in ids if rid not in held_by_id), None)
        if missing is not None:
            raise Untrusted(
                f"no verdict of probe {name} on id {missing!r}, a reply the judge got right"
            )
        short = next((rid for rid in ids if len(held_by_id[rid]) != trials[rid]), None)
        if short is not None:
            raise Untrusted(
                f"probe {name}'s verdicts on id {short!r} are {len(held_by_id[short])} trial(s), "
                f"not the {trials[short]} the reply itself was judged in"
            )
        said = {
            rid: majority(
                [Verdict(rid, v.passed) for v in sorted(held_by_id[rid], key=_trial)]
            ).passed
            for rid in ids
        }
        out += [
            count_flips(name, [(rid, label[rid]) for rid in ids], said, toward_pass)
            for toward_pass in directions(probing.kind)
        ]
    return tuple(out)


def _trial(line: Line) -> int:
    return line.trial


# (label, verdict) of a decided example: four values, one tuple each (a million examples hold
# them).
_PAIRS = {
    (label, verdict): (label, verdict) for label in (True, False) for verdict in (True, False)
}


def _by_example(lines: Sequence[Line], known: Container[str]) -> dict[str, Verdict]:
    """The final verdict of each example from one judge's lines (a judge escalated to)."""
    trials: dict[str, dict[int, Line]] = defaultdict(dict)
    for line in lines:
        if line.id not in known:
            raise Untrusted(
                f"a verdict of the judge escalated to for id {line.id!r}, which the set does not "
                "hold"
            )
        if line.trial in trials[line.id]:
            raise Untrusted(
                f"two verdicts of the judge escalated to for id {line.id!r} trial {line.trial}"
            )
        trials[line.id][line.trial] = line
    return {
        eid: majority([Verdict(eid, t[k].passed, confidence=t[k].confidence) for k in sorted(t)])
        for eid, t in trials.items()
    }


def same_figure(stored: Any, computed: float | None) -> bool:
    """Whether a figure a report stores is the one recomputed: a finite number within TOLERANCE,
    or null where the recomputed one is undefined."""
    if computed is None or (isinstance(computed, float) and math.isnan(computed)):
        return stored is None
    return (
        isinstance(stored, (int, float))
        and not isinstance(stored, bool)
        and math.isfinite(stored)
        and abs(stored - computed) <= TOLERANCE
    )


def _check_stop(
    entry: ReportEntry,
    labels: LabelledSet,
    final: dict[str, bool | None],
    stopping: StopThresholds | None,
    criterion: CriterionFile | None,
) -> float:
    """Untrusted unless the examples judged are the first of the seeded order and early stopping,
    under the gate's thresholds, stops exactly there; the confidence TPR and TNR are decided at
    (the sequential rule's last look asks for more than the gate's 95%)."""
    seed, batch, judged = entry.early_stop_seed, entry.early_stop_batch, entry.early_stop_judged
    if seed is None or batch is None or batch < 1 or stopping is None or judged is None:
        raise Untrusted("it stopped early, but its order (seed and batch) cannot be derived again")
    rule = entry.early_stop_rule
    if rule == "sequential":
        if criterion is None:
            raise Untrusted("it stopped by the sequential rule, but no criterion file is given")
        keys = _order_keys(labels, criterion)
        if seed != content_seed(keys):
            # An interim decision is not the whole set's: a chosen order would be a second chance.
            raise Untrusted(
                "it stopped by the sequential rule, whose order is the set's own (drawn from what "
                f"its examples are), but in another order (seed {seed})"
            )
        order = [labels.examples[i] for i in content_order(keys, entry.id)]
    else:
        order = [labels.examples[i] for i in stop_order(len(labels.examples), seed, entry.id)]
    first = order[:judged]
    if any(e.id not in final for e in first):
        raise Untrusted(
            f"its verdicts are not those of the first {judged} examples of its seeded order"
        )
    at, decided = stopped_at(
        [e.label for e in order], [final[e.id] for e in first], batch, stopping, rule
    )
    if at == judged < len(order) and decided is None:
        # Verdicts that end at a look which decided nothing: the run stopped where it liked.
        raise Untrusted(
            f"it stopped after {judged} of {len(order)} examples, where early stopping "
            f"({rule} rule) decides nothing under the gate's thresholds"
        )
    if at != judged:
        raise Untrusted(
            f"early stopping ({rule} rule) in its seeded order stops after {at} examples under "
            f"the gate's thresholds, not after the {judged} it holds"
        )
    if rule == "sequential" and judged == len(order):
        return last_look([e.label for e in order], [final[e.id] for e in first], stopping)
    return CONFIDENCE


def _order_keys(labels: LabelledSet, criterion: CriterionFile) -> list[str]:
    """Each labelled example's key in the sequential rule's order, as the runner keys it
    (judgekit.inputs.identity.order_keys): the set and the criterion read whole, as for copies."""
    read_set, load_criterion, order_keys = (
        _heavy(n) for n in ("read_set", "load_criterion", "order_keys")
    )
    try:
        loaded, problems = read_set(labels.path, labels.criterion_id)
        judge = load_criterion(criterion.path)
    except InputError as error:
        raise Untrusted(f"the set's order cannot be derived: {error}") from None
    if problems:
        raise Untrusted("the set's order cannot be derived: `judgekit validate` says why")
    by_id = {e.id: e for e in loaded.examples}
    missing = next((e.id for e in labels.examples if e.id not in by_id), None)
    if missing is not None:
        raise Untrusted(f"the set's order cannot be derived: no example {missing!r} in the set")
    return cast("list[str]", order_keys(judge, [by_id[e.id] for e in labels.examples]))


def verify(  # noqa: PLR0913  the evidence, then what the gate asks of it
    entry: ReportEntry,
    lines: Sequence[Line],
    labels: LabelledSet,
    now: datetime,
    stopping: StopThresholds | None = None,
    probing: Probing = Probing(),
    criterion: CriterionFile | None = None,
) -> Figures:
    """The entry's figures recomputed from the evidence, or Untrusted when the stored figures, the
    verdicts and the set disagree in any way, or a time lies in the future."""
    f = recompute(entry, lines, labels, stopping, probing, criterion)
    try:
        f.cells()
        if f.drawn:
            verify_design(f.labels, [v.passed for v in f.stages[0]], f.drawn)
    except DesignError as error:
        raise Untrusted(
            f"the set's selection records do not describe one design: {error}"
        ) from None
    _check_counts(entry, f)
    _check_figures(entry, f)
    _check_times(entry, f, now)
    return f


def _check_counts(entry: ReportEntry, f: Figures) -> None:
    """Untrusted when a count the report stores is not the one its verdicts give."""
    checks: list[tuple[str, Any, Any]] = [
        ("n", entry.n, f.n),
        ("abstained", entry.abstained, f.abstained),
        ("confusion (tp, fp, tn, fn)", entry.confusion, f.confusion),
        ("labelled_pass", entry.labelled_pass, f.labelled_pass),
        ("labelled_fail", entry.labelled_fail, f.labelled_fail),
    ]
    for name, stored, computed in checks:
        if stored != computed:
            raise Untrusted(f"report.json says {name} {stored} but its verdicts give {computed}")


def _check_figures(entry: ReportEntry, f: Figures) -> None:
    """Untrusted when a rate, an interval or the flip rate the report stores is not the one its
    verdicts give."""
    for name, value in f.rates().items():
        if not same_figure(entry.metrics.get(name), value):
            raise Untrusted(
                f"report.json says {name} {entry.metrics.get(name)} but its verdicts give "
                f"{value:.6g}"
            )
    # A seeded simulation gives kappa's interval: the gate computes its own when it needs one.
    for name, (low, high) in f.intervals(with_kappa=False).items():
        stored = entry.intervals.get(name)
        if not (
            isinstance(stored, (list, tuple))
            and len(stored) == 2
            and same_figure(stored[0], low)
            and same_figure(stored[1], high)
        ):
            raise Untrusted(
                f"report.json's {name} interval {stored} is not the one its verdicts give "
                f"({low:.4g}-{high:.4g})"
            )
    if not same_figure(entry.flip_rate, f.flip_rate):
        raise Untrusted(
            f"report.json says flip rate {entry.flip_rate} but its verdicts give {f.flip_rate}"
        )


def _check_times(entry: ReportEntry, f: Figures, now: datetime) -> None:
    """Untrusted when the evidence's time is unknown, is not the one the report stores, or a time
    lies in the future."""
    if f.evidence_at is None:
        raise Untrusted(
            "its verdicts do not say when they were given (a report of an older judgekit)"
        )
    if entry.evidence_at is None or abs(entry.evidence_at - f.evidence_at) > timedelta(seconds=1):
        raise Untrusted(
            f"report.json says its evidence is from {entry.evidence_at} but its verdicts are "
            f"from {f.evidence_at:%Y-%m-%d %H:%M:%S}"
        )
    for name, when in (("calibration time", entry.calibrated_at), ("evidence", f.evidence_at)):
        if when is None:
            raise Untrusted(f"report.json has no {name}")
        if when > now + CLOCK_SKEW:
            raise Untrusted(f"its {name} ({when:%Y-%m-%d %H:%M}) lies in the future")
