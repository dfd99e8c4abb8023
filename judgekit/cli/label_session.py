"""What the `judgekit label` page shows and where its labels go: a session over the unlabelled
records of a file (blind), or over a report's disagreements (review); who labels (an annotator's
name, or nobody named: `passed`); and the judge that judges an example once it is labelled.

- Blind: the judge's verdict stays hidden until the person has labelled. It is the latest
  report's, when that report judged the id; else the criterion's judge is asked then (through the
  usual cache), if the gate passes it — otherwise the page says that no judge ran, and why.
- Review: each disagreement with the judge's verdict and reason; an example labelled by several
  annotators shows each one's label, and `--annotator NAME` adds or changes that person's own.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgekit.errors import InputError, JudgekitError
from judgekit.gate.decision import Gate
from judgekit.gate.guard import judge_for
from judgekit.inputs.catalog import find_set
from judgekit.inputs.context_files import ContextFiles, ContextProblem, record_context
from judgekit.inputs.criteria import Criterion, load_criterion
from judgekit.inputs.journal import RolledBack, recover
from judgekit.inputs.label_reader import majority as annotators_majority
from judgekit.inputs.label_writer import (
    annotator_labels,
    check_annotator,
    is_annotated,
    label_of,
    read_records,
    write_label,
)
from judgekit.judging.judge import Judge
from judgekit.judging.recorded import load_recorded
from judgekit.judging.verdicts import Verdict, majority
from judgekit.report.model import Report
from judgekit.watch.findings import findings_of


@dataclass
class Item:
    """One example on the page. `judged`: a verdict is known (the report's or the judge's; None is
    an abstention); `unjudged`: why no judge ran on it."""

    id: str
    input: str | None
    output: str
    context: str | None
    label: bool | None = None
    verdict: bool | None = None
    reason: str | None = None
    judged: bool = False
    unjudged: str | None = None
    labels: dict[str, bool] | None = None  # several annotators' labels (review)


def _context(
    record: dict[str, Any], files: ContextFiles, path: Path, criterion: Criterion | None
) -> str | None:
    """The source material the page shows beside a record (its context file's text, read once),
    else the source the criterion's examples share (its `context_file`)."""
    try:
        own = record_context(record, files)
    except ContextProblem as error:
        raise InputError.one(path, f"id {record.get('id')}", str(error)) from None
    return own if criterion is None else criterion.context_for(own)


def _verdicts(
    report_dir: Path | None, criterion: str | None
) -> dict[str, tuple[bool | None, str | None]]:
    """Final verdicts by example id, from a report folder's verdicts.jsonl (trials' majority)."""
    if report_dir is None or not (report_dir / "verdicts.jsonl").is_file():
        return {}
    records = load_recorded(report_dir / "verdicts.jsonl")
    if criterion is None and len({r.criterion for r in records}) > 1:
        return {}  # verdicts of several criteria: without --criterion none of them is this file's
    trials: dict[str, list[Verdict]] = {}
    for r in records:
        if criterion is None or r.criterion in (None, criterion):
            trials.setdefault(r.id, []).append(Verdict(r.id, r.passed, r.reason, r.trial))
    return {i: (majority(t).passed, majority(t).reason) for i, t in trials.items()}


def page_judge(
    criterion_id: str | None,
    report: Path,
    criteria: Path,
    sets: Path,
    cache_dir: str | None = ".judgekit/cache",
) -> tuple[Judge | None, str]:
    """The criterion's judge as calibrated, when the gate passes it, and what the page says of it;
    else None and why no judge runs (no criterion named, not calibrated, blocked: the gate's
    reason)."""
    if criterion_id is None:
        return (
            None,
            "no criterion was named: give -c CRITERION to judge each example once it is labelled",
        )
    try:
        result = (
            Gate.from_project(criteria, sets, None, [criterion_id])
            .with_findings(findings_of(None))
            .check_path(report / "report.json" if report.is_dir() else report, [criterion_id])
        )
        judge = judge_for(load_criterion(criteria / f"{criterion_id}.yaml"), result, cache_dir)
    except JudgekitError as error:
        return None, f"the judge of {criterion_id} could not be set up: {error}"
    if judge.refusal is not None:
        why = "; ".join(f"{status}: {reason}" for _, status, reason in judge.refusal.blocked)
        return None, f"the gate does not pass the judge of {criterion_id} ({why})"
    return judge, f"the calibrated judge of {criterion_id} judges each example once it is labelled"


@dataclass
class Session:
    """What the page shows and where its labels go: `annotator` names who labels (None: `passed`);
    `judge` judges a blind example the report did not, else `judge_note` says why none does."""

    path: Path
    mode: str  # "label" or "review"
    question: str
    items: list[Item]
    annotator: str | None = None
    judge: Judge | None = None
    judge_note: str = (
        "no criterion was named: give -c CRITERION to judge each example once it is labelled"
    )
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    lock: threading.Lock = field(default_factory=threading.Lock)
    written: int = 0
    # labels cut off mid-write and undone
    rolled_back: list[RolledBack] = field(default_factory=list)
    # Review: told of each label changed (example, old, new, annotator), to keep it in the history.
    on_change: Callable[[str, bool | None, bool, str | None], None] | None = None

    def label(self, example_id: str, passed: bool) -> Item:
        """Write the person's label, then (blind) judge the example if nothing has yet."""
        item = next((i for i in self.items if i.id == example_id), None)
        if item is None:
            raise InputError.one(
                self.path, f"id {example_id}", "is not one of this page's examples"
            )
        # Blind, an annotator labels into labels.<name>; in review, only examples several people
        # labelled take an annotator's label: another's single label is fixed in `passed`.
        who = self.annotator if self.mode == "label" or item.labels is not None else None
        with self.lock:  # one write at a time: each reads the file as the last one left it
            before = item.label
            if (undone := write_label(self.path, example_id, passed, annotator=who)) is not None:
                self.rolled_back.append(undone)
            if item.labels is not None and who is not None:
                item.labels = {**item.labels, who: passed}
                item.label = annotators_majority(item.labels)
            else:
                item.label = passed
            self.written += 1
            if self.mode == "review" and self.on_change is not None and before != item.label:
                self.on_change(example_id, before, passed, who)
        if self.mode == "label" and not item.judged:
            self._judge(item)  # outside the lock: a slow judge holds up no other label
        return item

    def _judge(self, item: Item) -> None:
        if self.judge is None:
            item.unjudged = self.judge_note
            return
        try:
            verdict = self.judge(item.output, input=item.input, context=item.context)
        except JudgekitError as error:
            item.unjudged = f"the judge could not be run: {error}"
            return
        item.verdict, item.reason, item.judged, item.unjudged = (
            verdict.passed,
            verdict.reason,
            True,
            None,
        )


def labelling(
    path: Path,
    report_dir: Path | None = None,
    criterion: str | None = None,
    question: str = "",
    *,
    annotator: str | None = None,
    judge: Judge | None = None,
    judge_note: str | None = None,
    source: Criterion | None = None,
) -> Session:
    """A session over the records of `path` with no label yet (with `annotator`, none of theirs);
    a record with no context of its own is shown the source `source` (the criterion) shares."""
    if annotator is not None:
        check_annotator(annotator)
    undone = recover(path)
    records = read_records(path)
    files = ContextFiles(path.parent)
    verdicts = _verdicts(report_dir, criterion)
    items = [
        Item(
            str(r["id"]),
            r.get("input") or None,
            str(r["output"]),
            _context(r, files, path, source),
            None,
            *verdicts.get(str(r["id"]), (None, None)),
            judged=str(r["id"]) in verdicts,
        )
        for r in records
        if label_of(r, annotator) is None
    ]
    session = Session(
        path,
        "label",
        question or "Does the reply meet the criterion?",
        items,
        annotator,
        judge,
        rolled_back=[undone] if undone else [],
    )
    if judge_note is not None:
        session.judge_note = judge_note
    return session


def review(
    criterion_id: str,
    criteria_dir: Path,
    sets_dir: Path,
    report_dir: Path,
    *,
    annotator: str | None = None,
    recheck: dict[str, str] | None = None,
) -> Session:
    """A session over the disagreements of the latest report for one criterion; an example several
    annotators labelled comes with each one's label. The labels to re-check (`recheck`: id -> the
    evidence against its label) come first, their evidence shown as the reason."""
    if annotator is not None:
        check_annotator(annotator)
    criterion = load_criterion(criteria_dir / f"{criterion_id}.yaml")
    found = Report.read(report_dir).criterion(criterion_id)
    if found is None:
        raise InputError.one(report_dir, criterion_id, "is not in this report; calibrate it first")
    path = find_set(sets_dir, criterion_id)
    undone = recover(path)
    records = {str(r["id"]): r for r in read_records(path)}
    files = ContextFiles(path.parent)
    items = []
    recheck = recheck or {}
    shown = {d.id: d for d in found.disagreements}
    for rid in [
        *[i for i in recheck if i in records],
        *[i for i in shown if i not in recheck and i in records],
    ]:
        r = records[rid]
        labels = annotator_labels(r) if is_annotated(r) else None
        d = shown.get(rid)
        label = annotators_majority(labels) if labels else (d.label if d else label_of(r, None))
        reason = (
            f"labels to re-check: {recheck[rid]}" if rid in recheck else (d.reason if d else None)
        )
        verdict = d.verdict if d else (None if label is None else not label)
        items.append(
            Item(
                rid,
                r.get("input") or None,
                str(r.get("output") or ""),
                _context(r, files, path, criterion),
                label,
                verdict,
                reason,
                True,
                labels=labels,
            )
        )
    return Session(
        path, "review", criterion.question, items, annotator, rolled_back=[undone] if undone else []
    )
