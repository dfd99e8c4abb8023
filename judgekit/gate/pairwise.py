"""The gate's decision on a pairwise criterion (`kind: pairwise`): its entry in report.json's
`pairwise` list read plainly (judgekit.report.pairwise), fresh (the criterion, its set and its
judge are the ones calibrated; its evidence younger than max_age), every pair's two answers
recounted against the labels on disk, then the thresholds on the intervals' bounds: accuracy
(min_accuracy, Wilson), consistency across orders (min_consistency, exact), and the share of
pairs each position won in both orders (max_position_bias, exact). An inconsistent pair is never
a win: it is an abstention or a tie, as the criterion says, and counts against consistency.

>>> from judgekit.inputs.policy import Thresholds
>>> bound_says(0.85, (0.8, 0.9), 0.75, "at least")
'ok'
>>> bound_says(0.3, (0.2, 0.4), 0.1, "at most")
'fail'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from judgekit.gate.evidence import same_figure
from judgekit.gate.result import Decision, Status
from judgekit.gate.rules import label_sources
from judgekit.inputs.catalog import CriterionFile, find_set
from judgekit.inputs.pairwise import PairSet, PairwiseCriterion, load_pairwise, read_pair_set
from judgekit.inputs.policy import Thresholds, parse_duration
from judgekit.judging.pairwise import PAIR_PROBES, pair_probed, pair_setup_now
from judgekit.llm.families import family, same_model
from judgekit.report.pairwise import (
    PairEntry,
    numbers,
    parse_pair_entry,
    probe_figures,
    recount,
)
from judgekit.report.reading import Untrusted
from judgekit.stats.pairwise import PairwiseFigures

_AGAIN = "run `judgekit calibrate` again"
Said = Literal["ok", "fail", "unsure"]


@dataclass(frozen=True)
class PairProject:
    """A pairwise criterion as on disk: its model as loaded (the digest of its bytes with it) and
    its set, made distinct (judgekit.inputs.pairwise.read_pair_set)."""

    criterion: PairwiseCriterion
    file: CriterionFile
    pairs: PairSet


def pair_project(file: CriterionFile, sets_dir: Path) -> PairProject:
    """A pairwise criterion's file loaded, and its set read and made distinct (an InputError
    listing every problem when either is bad, as for a yes/no criterion's set)."""
    criterion = load_pairwise(file.path)
    return PairProject(criterion, file, read_pair_set(find_set(sets_dir, criterion.id), criterion))


def bound_says(point: float, interval: tuple[float, float], threshold: float, side: str) -> Said:
    """What an interval shows of a rate against a threshold it must be `at least` / `at most`:
    ok when the whole interval is on the right side, fail when the whole is on the wrong side."""
    low, high = interval
    if side == "at least":
        return "ok" if low >= threshold else "fail" if high < threshold else "unsure"
    return "ok" if high <= threshold else "fail" if low > threshold else "unsure"


def decide_pairwise(
    project: PairProject,
    found: Sequence[Any],
    t: Thresholds,
    now: datetime,
    agent_model: str | None = None,
) -> Decision:
    """One pairwise criterion's decision from the entries a report holds for it."""
    cid = project.criterion.id
    if not found:
        return Decision(cid, "FAIL", ("no calibration report for this criterion; " + _AGAIN,))
    if len(found) > 1:
        return Decision(
            cid, "FAIL", (f"report.json holds {len(found)} entries for this criterion; " + _AGAIN,)
        )
    try:
        entry = parse_pair_entry(found[0])
        stale = _staleness(project, entry)
        if stale:
            return Decision(cid, "FAIL", (*stale, _AGAIN), model=entry.setup.model)
        figures = _recounted(project, entry, now)
        fails, unsure = _probing(project, entry, t)
    except Untrusted as error:
        return Decision(cid, "FAIL", (f"the report is not evidence: {error}; " + _AGAIN,))
    blocked = _blocked(project, entry, t, now, agent_model)
    if blocked:
        return Decision(cid, "FAIL", (blocked,), model=entry.setup.model, entry=entry)
    status, reasons = thresholds(
        figures, t, sided_figures(project.pairs.select(entry.split), entry)
    )
    if fails:
        # a PASS's one reason is its summary, no longer true; the others' reasons stand
        reasons = [*fails, *(reasons if status != "PASS" else [])]
        status = "FAIL"
    elif unsure and status == "PASS":
        status, reasons = "INCONCLUSIVE", unsure
    elif unsure:
        reasons = [*reasons, *unsure]
    return Decision(cid, status, tuple(reasons), model=entry.setup.model, entry=entry)


def _blocked(
    project: PairProject,
    entry: PairEntry,
    t: Thresholds,
    now: datetime,
    agent_model: str | None,
) -> str | None:
    """Why evidence that holds together still may not pass (None when nothing stands in the way):
    whose labels they are, the agent's own model, its age, one order only."""
    wrong_labels = pair_label_sources(project.pairs.select(entry.split), t, entry.setup.model)
    if wrong_labels:
        return wrong_labels
    clash = _agent_clash(entry, agent_model)
    if clash:
        return clash
    if (
        t.max_age is not None
        and entry.evidence_at is not None
        and now - entry.evidence_at > parse_duration(t.max_age)
    ):
        return f"its evidence is older than max_age {t.max_age}; " + _AGAIN
    if entry.orders == 1:
        return (
            "its verdicts were recorded in one order only (reply a shown first), so nothing "
            "shows its consistency or its position preference; record both orders (a_first "
            "and b_first) or calibrate the judge live"
        )
    return None


def _probing(project: PairProject, entry: PairEntry, t: Thresholds) -> tuple[list[str], list[str]]:
    """The probes' counts recounted from their answers against the labels on disk, then, under a
    policy that sets max_probe_flip, each probe's flip rate on its exact interval's upper bound:
    (fails, unsure). A probe the policy asks for and the report lacks is a fail."""
    pairs = project.pairs.select(entry.split)
    labels = {e.id: e.gold for e in pairs.examples}
    verdicts = {v.example_id: v for v in entry.verdicts}
    chosen = pair_probed(labels, verdicts, entry.inconsistent)
    names = list(PAIR_PROBES) if t.max_probe_flip is not None else list(entry.probe_verdicts)
    fails, unsure = [], []
    for name in names:
        found = entry.probe_verdicts.get(name)
        if found is None:
            fails.append(
                f"the report holds no {name} probe, which max_probe_flip asks for; " + _AGAIN
            )
            continue
        expected = [i for i in chosen if name == "same_reply" or labels[i] != "tie"]
        if sorted(v.example_id for v in found) != sorted(expected):
            raise Untrusted(f"its {name} probe rewrote other pairs than the ones it decided right")
        counted = probe_figures(name, labels, found, entry.inconsistent)
        stored = entry.probes.get(name) or {}
        if any(stored.get(k) != getattr(counted, k) for k in ("tried", "flipped", "abstained")):
            raise Untrusted(f"its {name} probe's counts are not what its answers give")
        if t.max_probe_flip is None:
            continue
        if not counted.tried:
            unsure.append(
                f"probe {name} had no pair to rewrite (none the judge decided right that it "
                "keeps the label of); label more pairs"
            )
            continue
        low, high = (x if x is not None else math.nan for x in counted.interval)
        rate = counted.flipped / counted.tried
        said = bound_says(rate, (low, high), t.max_probe_flip, "at most")
        words = (
            f"probe {name} moved {counted.flipped} of {counted.tried} pairs off their label "
            f"({rate:.2f} [{low:.2f}, {high:.2f}]), must be at most max_probe_flip "
            f"{t.max_probe_flip:g}"
        )
        if said == "fail":
            fails.append(words)
        elif said == "unsure":
            unsure.append(words + ": the interval spans it; label more pairs")
    return fails, unsure


def _staleness(project: PairProject, entry: PairEntry) -> list[str]:
    """Why the entry is not about the files and the judge on disk now (empty: it is)."""
    reasons = []
    if entry.inputs.get("criterion") != project.file.digest:
        reasons.append(f"criteria/{project.criterion.id}.yaml changed since it was calibrated")
    if entry.inputs.get("set") != project.pairs.digest:
        reasons.append("the calibration set changed since it was calibrated")
    if entry.setup.digest != entry.fingerprint:
        raise Untrusted("its fingerprint is not the digest of the judge setup it states")
    recorded = entry.setup
    now = pair_setup_now(project.criterion, recorded)
    if now.digest != recorded.digest and not reasons:
        reasons.append(
            "its judge is not the one the criterion defines now: "
            + "; ".join(recorded.differences(now))
        )
    return reasons


def _same(stored: Any, computed: Any) -> bool:
    """`same_figure`, for an interval (a list of two) too."""
    if isinstance(computed, list):
        return (
            isinstance(stored, list)
            and len(stored) == len(computed)
            and all(same_figure(s, c) for s, c in zip(stored, computed, strict=True))
        )
    return same_figure(stored, computed)


def _recounted(project: PairProject, entry: PairEntry, now: datetime) -> PairwiseFigures:
    """The entry's figures recounted from its answers against the labels on disk; Untrusted when
    its pairs are not exactly the set's, a stored figure differs, or a time is in the future."""
    pairs = project.pairs.select(entry.split)
    labels = {e.id: e.gold for e in pairs.examples}
    judged = [v.example_id for v in entry.verdicts]
    if len(set(judged)) != len(judged):
        raise Untrusted("it holds two verdicts for one pair")
    missing, extra = set(labels) - set(judged), set(judged) - set(labels)
    if missing or extra:
        said = [f"no verdict for {sorted(missing)[:3]}"] if missing else []
        said += [f"verdicts for pairs the set does not hold ({sorted(extra)[:3]})"] if extra else []
        raise Untrusted("its pairs are not the set's: " + "; ".join(said))
    if entry.inconsistent != project.criterion.inconsistent:
        raise Untrusted("it counted inconsistent pairs otherwise than the criterion says")
    figures = recount(labels, entry.verdicts, entry.inconsistent, entry.orders)
    computed = numbers(figures)
    for name, value in computed.items():
        if not _same(entry.figures.get(name), value):
            raise Untrusted(f"its {name} is not what its verdicts give against the labels on disk")
    for name, when in (("calibrated_at", entry.calibrated_at), ("evidence_at", entry.evidence_at)):
        if when is None:  # its answers carry no time of their own: the entry's is their age
            raise Untrusted(f"it does not say when it was {name.split('_')[0]}")
        if when > now:
            raise Untrusted(f"its {name} is in the future")
    return figures


def pair_label_sources(pairs: PairSet, t: Thresholds, judge_model: str | None) -> str | None:
    """Why the pairs' labels are not ground truth for this judge (rules.label_sources)."""
    return label_sources([e.made_by for e in pairs.examples], t, judge_model)


def _agent_clash(entry: PairEntry, agent_model: str | None) -> str | None:
    if not agent_model:
        return None
    model = entry.setup.model
    if not model:
        return (
            "the report names no judge model, so nothing shows it is not the agent's "
            f"({agent_model}); calibrate with the judge's model named (--model)"
        )
    if same_model(model, agent_model) or family(model) == family(agent_model):
        return (
            f"the judge is the agent's own model: judge {model} and agent {agent_model} are both "
            f"{family(agent_model)}; calibrate a judge of another model"
        )
    return None


def _fmt(interval: tuple[float, float]) -> str:
    return f"[{interval[0]:.2f}, {interval[1]:.2f}]"


def sided_figures(pairs: PairSet, entry: PairEntry) -> PairwiseFigures:
    """The figures on the pairs labelled a or b alone: what min_accuracy and min_examples decide
    on (a set of ties shows nothing of choosing the better reply, and ties a judge calls ties
    would make a judge that never chooses look accurate)."""
    labels = {e.id: e.gold for e in pairs.examples if e.gold != "tie"}
    return recount(labels, entry.verdicts, entry.inconsistent, entry.orders)


def thresholds(
    f: PairwiseFigures, t: Thresholds, sided: PairwiseFigures
) -> tuple[Status, list[str]]:
    """PASS, FAIL or INCONCLUSIVE of a pairwise judge's recounted figures, with every reason;
    `sided`: its figures on the pairs labelled a or b, which accuracy and min_examples count."""
    fails: list[str] = []
    unsure: list[str] = []
    if sided.n < t.min_examples:
        unsure.append(
            f"{sided.n} labelled pairs where one reply is better (a or b), fewer than "
            f"min_examples {t.min_examples}; label more such pairs (ties alone show nothing of "
            "choosing)"
        )
    undecided = f.n - f.decided  # no answer, or (counted as abstentions) orders that disagree
    if f.n and undecided / f.n > t.max_abstain_rate:
        fails.append(
            f"{undecided} of {f.n} pairs got no verdict ({f.abstained} without an answer in both "
            f"orders), over max_abstain_rate {t.max_abstain_rate:g}"
        )
    if not f.decided:
        fails.append("no pair got a verdict; nothing shows the judge agrees with the labels")
    elif sided.n and not sided.decided:
        fails.append("no pair labelled a or b got a verdict; nothing shows the judge chooses")
    checks = [
        (
            "accuracy on the pairs labelled a or b",
            sided.accuracy,
            sided.accuracy_interval,
            t.min_accuracy,
            "at least",
        ),
        (
            "consistency across orders",
            f.consistency,
            f.consistency_interval,
            t.min_consistency,
            "at least",
        ),
        (
            "pairs the first position won in both orders",
            f.first_decided,
            f.first_decided_interval,
            t.max_position_bias,
            "at most",
        ),
        (
            "pairs the second position won in both orders",
            f.second_decided,
            f.second_decided_interval,
            t.max_position_bias,
            "at most",
        ),
    ]
    for name, point, interval, threshold, side in checks:
        if math.isnan(point) or any(math.isnan(x) for x in interval):
            continue
        bounds = interval if t.use_lower_bound else (point, point)
        said = bound_says(point, bounds, threshold, side)
        words = f"{name} {point:.2f} {_fmt(interval)} must be {side} {threshold:g}"
        if said == "fail":
            fails.append(words)
        elif said == "unsure":
            unsure.append(words + ": the interval spans it; label more pairs")
    if fails:
        return "FAIL", fails + unsure
    if unsure:
        return "INCONCLUSIVE", unsure
    return "PASS", [
        f"accuracy {sided.accuracy:.2f} on the {sided.n} pairs labelled a or b ({f.accuracy:.2f} "
        f"on all {f.n}), consistency {f.consistency:.2f}, pairs a position won "
        f"{f.first_decided:.2f} / {f.second_decided:.2f} (first / second)"
    ]
