"""Promoting a candidate (`judgekit compare ... --adopt NAME`): its settings written into the
criterion file, and its calibration, the very one the comparison measured, made the criterion's
calibration report.

The criterion file becomes the candidate's: a variant's file, or the criterion's own, with the
candidate's judge.model and judge.trials. The new file is read back and must define the same
judge (the same fingerprint) as the candidate measured, or nothing is written; only then does
the report name the new file's digest, so the gate takes it as a report about the file on disk.
A recorded candidate (another tool's verdicts) leaves the criterion file as it is: its report
says where the verdicts came from, as `calibrate --verdicts` would.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

import yaml

from judgekit.compare.run import Measured
from judgekit.errors import InputError
from judgekit.inputs.criteria import JUDGED, load_variant
from judgekit.inputs.files import read_source, read_text, read_yaml, write_atomic
from judgekit.judging.build_setup import setup_now
from judgekit.judging.setup import JudgeSetup
from judgekit.report.model import CriterionReport


@dataclass(frozen=True)
class Change:
    path: Path
    before: str
    after: str
    state: str = (
        "adopted"  # how the diff names the new file: adopted, or (judgekit improve) proposed
    )

    def diff(self) -> str:
        lines = difflib.unified_diff(
            self.before.splitlines(keepends=True),
            self.after.splitlines(keepends=True),
            f"{self.path} (now)",
            f"{self.path} ({self.state})",
        )
        return "".join(lines) or f"{self.path}: unchanged\n"


def proposed(m: Measured, criteria_dir: Path) -> Change:
    """The criterion file as the candidate would have it."""
    spec = m.spec
    path = criterion_path(criteria_dir, spec.criterion.id)
    before = read_text(path)
    if not spec.live or not isinstance(spec.criterion, JUDGED):
        return Change(path, before, before)
    source = spec.variant or path
    data = read_yaml(source)
    judge = dict(data.get("judge") or {})
    judge["model"] = spec.criterion.judge.model
    if spec.criterion.judge.trials != 1 or "trials" in judge:
        judge["trials"] = spec.criterion.judge.trials
    text = read_text(source)
    if judge == (data.get("judge") or {}):
        after = text  # the file as it is (comments kept): the criterion's own, or the variant's
    else:  # rewritten: the leading comment lines are kept, others are not
        head = "".join(leading_comments(text))
        after = head + yaml.safe_dump(
            {**data, "judge": judge}, sort_keys=False, allow_unicode=True, width=100
        )
    return Change(path, before, after)


def leading_comments(text: str) -> list[str]:
    """The comment lines a YAML file opens with (kept when the file is rewritten)."""
    out = []
    for line in text.splitlines(keepends=True):
        if not line.startswith("#"):
            break
        out.append(line)
    return out


def check(m: Measured, criteria_dir: Path, force: bool = False) -> None:
    """Refuse to adopt what the gate blocks (unless `force`), or a candidate whose files changed on
    disk while it was judged: what is adopted is what was measured."""
    if m.decision.status != "PASS" and not force:
        raise InputError.one(
            "--adopt",
            m.spec.name,
            f"the gate blocks it ({m.decision.status}: "
            f"{'; '.join(m.decision.reasons)}); adopt a candidate that passes, or add --force",
        )
    path = m.spec.variant or criterion_path(criteria_dir, m.spec.criterion.id)
    if not path.is_file() or read_source(path).digest != m.spec.criterion.digest:
        raise InputError.one(
            path,
            "",
            "changed since the comparison read it; nothing was adopted. Run the comparison again",
        )


def criterion_path(criteria_dir: Path, criterion_id: str) -> Path:
    path = criteria_dir / f"{criterion_id}.yaml"
    return (
        path
        if path.is_file() or not (criteria_dir / f"{criterion_id}.yml").is_file()
        else criteria_dir / f"{criterion_id}.yml"
    )


def adopt(m: Measured, change: Change) -> CriterionReport:
    """Write the criterion file (when it changes) and return the candidate's report, naming it;
    a file that would not define the judge measured is put back as it was, and refused."""
    report = m.report
    if change.after != change.before:
        # the user's own file: secrets stay as they were
        write_atomic(change.path, change.after, verbatim=True)
    written = load_variant(change.path, report.id)
    measured = report.judge.setup if report.judge is not None else None
    if m.spec.live and (
        measured is None
        or setup_now(written, JudgeSetup.from_json(measured)).digest != report.fingerprint
    ):
        write_atomic(change.path, change.before, verbatim=True)
        raise InputError.one(
            change.path,
            "judge",
            "written, it would not define the judge the comparison measured; "
            "left as it was. Copy the candidate's settings by hand and run `judgekit calibrate`",
        )
    return report.model_copy(
        update={"inputs": {**(report.inputs or {}), "criterion": written.digest}}
    )
