"""Recorded verdicts paired with the examples of the sets, in one pass over the records as they
are read (`iter_recorded`): a file of a million verdicts is never held as a million records, only
as the engine's verdicts they become, one per example and trial.

Verdicts for unknown ids and examples without a verdict are problems that list them all; nothing
is dropped silently. A record with claims and no `passed` is decided by the strict rule, with the
criterion's `no_claims` (default fail); a record that gives both must agree with the rule. A
record without `at` counts as obtained when the file was last written.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from judgekit.errors import Problem
from judgekit.inputs.criteria import Criterion
from judgekit.inputs.pair import proven
from judgekit.inputs.sets import CalibrationSet
from judgekit.judging.recorded import RecordedVerdict, recorded_verdict
from judgekit.judging.setup import Source
from judgekit.judging.verdicts import Verdict


@dataclass
class Matched:
    """What a pass over a verdict file found."""

    # Per criterion matched: per example, in the set's order, its trials.
    trials: dict[str, list[list[Verdict]]] = field(default_factory=dict)
    # The criteria its records name (None: a record names none).
    named: set[str | None] = field(default_factory=set)
    # Per criterion matched: its records' judges.
    judges: dict[str, set[str | None]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def provenance(self, criterion: Criterion, mark: str | None, path: Path) -> str:
        """`replayed:<file>` when every verdict of the criterion carries `mark`, the mark of the
        judge this run would ask (judgekit.judging.setup), and the file is proven judgekit's (a
        report's verdicts.jsonl, signed under the evidence key: judgekit.inputs.pair.proven),
        else `recorded:<file>`: another tool's judge, which judgekit may gate but never stands
        in for. A mark alone proves nothing: anyone can write it."""
        judges = self.judges.get(criterion.id, set())
        if mark is not None and judges == {mark} and proven(path):
            return str(Source("replayed", path.name))
        return str(Source("recorded", path.name))


def match_file(
    path: Path,
    records: Iterable[RecordedVerdict],
    sets: dict[str, CalibrationSet],
    no_claims: dict[str, str] | None = None,
    every: bool = False,
    default_at: float | None = None,
) -> Matched:
    """Pair `records` with the examples of `sets`. With `every`, each criterion of `sets` is
    matched (one judge's file, `judgekit compare`); else those the records name, and with one
    criterion in `sets`, records that name none are its (`calibrate --verdicts`). Records of other
    criteria, and of judges escalated to (the gate reads those), are left alone. A record without
    a time of its own is `default_at` old (when the file was first calibrated; None: now)."""
    source = str(path)
    only = next(iter(sets)) if len(sets) == 1 else None
    pairing = _Pairing(source, default_at, no_claims or {}, sets)
    out = pairing.out
    unnamed, unnamed_judges = pairing.read(records, only)
    matched = (
        list(sets)
        if every
        else [cid for cid in sets if cid in out.named or (None in out.named and only)]
    )
    if None in out.named and len(matched) > 1:
        out.problems.append(
            Problem(
                source,
                "criterion",
                f"verdicts without a 'criterion' column cannot be matched "
                f"to {len(matched)} criteria; add the column or pass --criterion ID",
            )
        )
        return out
    for r in unnamed if matched else ():
        pairing.take(r, matched[0])
    pairing.ids.clear()
    for criterion_id in matched:
        if None in out.named:
            out.judges[criterion_id] |= unnamed_judges
        out.trials[criterion_id] = _in_order(
            source, criterion_id, sets[criterion_id], pairing.groups.pop(criterion_id), out.problems
        )
    return out


@dataclass
class _Pairing:
    """A pass over a verdict file as it is read: per criterion of `sets`, the verdicts taken so far
    by example id (one trial's verdict, or several by trial), and what was found (`out`)."""

    source: str
    default_at: float | None
    rules: dict[str, str]  # per claims criterion, its `no_claims`
    sets: dict[str, CalibrationSet]
    out: Matched = field(init=False)
    groups: dict[str, dict[str, Verdict | dict[int, Verdict]]] = field(init=False)
    ids: dict[str, str] = field(init=False)  # the sets' own id strings, shared

    def __post_init__(self) -> None:
        self.out = Matched(judges={cid: set() for cid in self.sets})
        self.groups = {cid: {} for cid in self.sets}
        self.ids = {e.id: e.id for cal in self.sets.values() for e in cal.examples}

    def read(
        self, records: Iterable[RecordedVerdict], only: str | None
    ) -> tuple[list[RecordedVerdict], set[str | None]]:
        """Take each record of a criterion of the sets (with one criterion, `only`, records that
        name none are its); the records naming none, while it is not known whose they are, are
        returned with their judges."""
        unnamed: list[RecordedVerdict] = []
        unnamed_judges: set[str | None] = set()
        for r in records:
            name = r.criterion or None  # an empty criterion names none
            self.out.named.add(name)
            if name is None:
                unnamed_judges.add(r.judge)
            elif name in self.out.judges:
                self.out.judges[name].add(r.judge)
            criterion_id = name or only
            # an escalation's verdict, or one on a probe's rewrite: not the example's own
            if r.stage or r.probe or (criterion_id is None and not self.sets):
                continue
            if criterion_id is None:
                unnamed.append(r)
            elif criterion_id in self.groups:
                self.take(r, criterion_id)
        return unnamed, unnamed_judges

    def take(self, r: RecordedVerdict, criterion_id: str) -> None:
        """Add one record's verdict to its criterion's, or its problem to those found."""
        group = self.groups[criterion_id]
        example_id = self.ids.get(r.id, r.id)
        held = group.get(example_id)
        if held is not None and r.trial in ((held.trial,) if isinstance(held, Verdict) else held):
            self.out.problems.append(
                Problem(
                    self.source,
                    f"id {r.id}",
                    f"has two verdicts for criterion {criterion_id!r} "
                    f"trial {r.trial}; keep one or number the trials",
                )
            )
            return
        if r.claims is not None and criterion_id not in self.rules:
            self.out.problems.append(
                Problem(
                    self.source,
                    f"id {r.id}",
                    f"gives claims, but criterion {criterion_id!r} is not "
                    "a claims criterion; give 'passed' instead",
                )
            )
            return
        verdict, problem = recorded_verdict(
            r, self.rules.get(criterion_id, "fail"), self.default_at, example_id
        )
        if problem is not None:
            self.out.problems.append(
                Problem(self.source, f"id {r.id}", f"{problem}; fix one, or leave out passed")
            )
            return
        if held is None:
            group[example_id] = verdict
        elif isinstance(held, Verdict):
            group[example_id] = {held.trial: held, r.trial: verdict}
        else:
            held[r.trial] = verdict


def _in_order(
    source: str,
    criterion_id: str,
    cal: CalibrationSet,
    group: dict[str, Verdict | dict[int, Verdict]],
    problems: list[Problem],
) -> list[list[Verdict]]:
    """Per example of the set, in its order, its trials; the examples without one and the ids
    not in the set are problems. (The group is emptied as it is read.)"""
    found: list[list[Verdict]] = []
    missing: list[str] = []
    for e in cal.examples:
        held = group.pop(e.id, None)
        if held is None:
            missing.append(e.id)
        elif isinstance(held, Verdict):
            found.append([held])
        else:
            found.append(sorted(held.values(), key=_trial))
    # A copy's verdict is of the example it copies, counted once (judgekit.inputs.identity).
    copies = {i for ids in cal.copies.values() for i in ids}
    unknown = sorted(i for i in group if i not in copies)
    if unknown:
        problems.append(
            Problem(
                source,
                criterion_id,
                f"{len(unknown)} verdict(s) for ids not in {cal.path}: "
                f"{', '.join(unknown[:20])}{' …' if len(unknown) > 20 else ''}",
            )
        )
    if missing:
        problems.append(
            Problem(
                source,
                criterion_id,
                f"{len(missing)} example(s) of {cal.path} have no "
                f"verdict: {', '.join(missing[:20])}{' …' if len(missing) > 20 else ''}",
            )
        )
    return found


def _trial(verdict: Verdict) -> int:
    return verdict.trial
