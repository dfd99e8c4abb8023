"""Labels to re-check: examples on which judges that pass the gate (the criterion's judge in the
latest report, the candidates of the latest `judgekit compare`) agree with each other and
confidently against the label. Labels are never changed here; `judgekit label --review` shows
these first, with the evidence, and a person decides.

An example is listed when every such judge that gave it a verdict gave the same one, the label's
opposite, and the evidence is more than one voice: two judges or more (a judge is its model and
prompt: the report's judge and the same model and prompt compared, in any number of trials, are
one voice), or one
judge sure of it (at least three trials, all alike, or a confidence of at least SURE on each).
`compare.json`'s gate decisions are taken as written: the list only proposes labels to look at.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from judgekit.compare.model import Comparison
from judgekit.errors import InputError
from judgekit.gate.decision import Gate
from judgekit.inputs.files import read_text
from judgekit.inputs.label_reader import LabelledSet
from judgekit.judging.selection import SURE
from judgekit.report.reading import Line, Untrusted, read_pair, read_report

SURE_TRIALS = 3
# example id -> judge (its model and prompt) -> (verdict, who, sure)
Votes = defaultdict[str, dict[str, tuple[bool, str, bool]]]


@dataclass(frozen=True)
class Suspect:
    """An example whose label the judges that pass the gate agree against, and their evidence."""

    id: str
    label: bool
    evidence: tuple[str, ...]

    def words(self) -> str:
        said = "pass" if self.label else "fail"
        return f"labelled {said}, but {'; '.join(self.evidence)}"


def suspects(
    criterion_id: str, labels: LabelledSet, gate: Gate, report_dir: Path, compare_dir: Path
) -> list[Suspect]:
    """The labels to re-check of one criterion, in the set's order."""
    # id -> judge (its model and prompt: one voice however often, and in how many trials, it was
    # asked) -> (verdict, who, sure)
    votes: Votes = defaultdict(dict)
    _report_votes(criterion_id, gate, report_dir, votes)
    _compare_votes(criterion_id, gate, compare_dir, votes)
    found = []
    for e in labels.examples:
        given = list(votes.get(e.id, {}).values())
        if not given or any(verdict == e.label for verdict, _, _ in given):
            continue
        if len(given) >= 2 or any(sure for _, _, sure in given):
            found.append(Suspect(e.id, e.label, tuple(who for _, who, _ in given)))
    return found


def _report_votes(criterion_id: str, gate: Gate, report_dir: Path, votes: Votes) -> None:
    path = report_dir / "report.json" if report_dir.is_dir() else report_dir
    if not path.is_file():
        return
    decision = gate.check_path(path, [criterion_id]).decisions[0]
    if decision.status != "PASS" or decision.entry is None:
        return
    model = decision.entry.model or "the criterion's judge"  # as the gate read and checked it
    judge = f"{model}\0"  # the criterion file's own prompt
    try:
        found = read_report(path)
        # the verdicts the report names, as the gate read them (a torn pair's previous ones)
        lines = [
            x
            for x in read_pair(path, found.verdicts_sha256 if found else None)
            if x.criterion == criterion_id and not x.stage
        ]
    except Untrusted:
        return
    trials: dict[str, list[Line]] = defaultdict(list)
    for line in lines:
        trials[line.id].append(line)
    for example_id, given in trials.items():
        verdicts = {x.passed for x in given}
        if len(verdicts) != 1 or None in verdicts:
            continue  # its own trials disagree, or it abstained: no vote
        sure = len(given) >= SURE_TRIALS or all(
            x.confidence is not None and x.confidence >= SURE for x in given
        )
        word = "fail" if not given[0].passed else "pass"
        how = f"{len(given)} of {len(given)} trials" if len(given) > 1 else "one trial"
        votes[example_id][judge] = (
            bool(given[0].passed),
            f"{model} (gate PASS, report) says {word} in {how}"
            + (f", confidence {given[0].confidence:.2f}" if given[0].confidence else ""),
            sure,
        )


def _compare_votes(criterion_id: str, gate: Gate, compare_dir: Path, votes: Votes) -> None:
    path = compare_dir / criterion_id / "compare.json"
    if not path.is_file():
        return
    try:
        found = Comparison.model_validate_json(read_text(path))
    except (InputError, ValueError):
        return
    for c in found.candidates:
        if c.gate != "PASS":
            continue
        judge = (
            f"{c.setting.model}\0{c.setting.variant or ''}"
            if c.setting.model
            else f"file\0{c.setting.verdicts}"
        )
        for example, mark in zip(found.examples, c.grid, strict=True):
            # the report's own vote of it is surer
            if mark in "pf" and judge not in votes[example.id]:
                votes[example.id][judge] = (
                    mark == "p",
                    f"candidate {c.name} (gate PASS, compare) says "
                    f"{'pass' if mark == 'p' else 'fail'}",
                    False,
                )
