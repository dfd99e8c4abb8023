"""`judgekit.calibrate`: a calibration recorded in the project's history, from Python as from the
shell (`judgekit calibrate` runs the same function).

A run that measures a judge on test-split examples is a look at the test split, whatever asked
for it: it is recorded (a changed judge's look spends the split's budget,
judgekit.watch.alpha_budget), or, with no history kept, refused (judgekit.inputs.heldout). The run
also reads what the history knows: a recheck's finding that a judge changed (its older cached
answers are asked again) and when a verdict file was first calibrated.

>>> import inspect
>>> list(inspect.signature(calibrate).parameters)
['options', 'llm', 'progress']
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from judgekit.errors import InputError
from judgekit.inputs.policy import Policy
from judgekit.inputs.sets import CalibrationSet
from judgekit.judging.jobs import run_sync
from judgekit.llm.protocol import LLM
from judgekit.pipeline import Options, ameasure_read
from judgekit.report.model import Report
from judgekit.signing import evidence_key
from judgekit.watch.findings import Findings, changed_at, findings_of, read_findings
from judgekit.watch.history import History, record_history
from judgekit.watch.store import locate

Progress = Callable[[int, int], None]

# How a Python caller records the run it asked for; the CLI names its flags instead.
PYTHON_FIX = (
    "keep a history (Options(keep_history=True), the default, or Options(history=...)), or "
    'calibrate the dev split (Options(split="dev"))'
)


# Where `judgekit calibrate` writes its report: the Python API writes none, but reads the one
# there, whose judges tell a changed one even in a new history.
REPORT = Path(".judgekit/reports/latest")


def calibrate(options: Options, llm: LLM | None = None, progress: Progress | None = None) -> Report:
    """Calibrate every chosen criterion, record the run in the history (`options.history`, else
    where `judgekit calibrate` finds it) and return the report; no report file is written. Works
    inside a running event loop too (a notebook, an async test); there, `await acalibrate(...)`
    is the same. Refused (InputError) when `options.keep_history` is False and a chosen set holds
    test-split examples."""
    return run_sync(acalibrate(options, llm, progress))


async def acalibrate(
    options: Options, llm: LLM | None = None, progress: Progress | None = None
) -> Report:
    """`calibrate`, awaited: for code that already runs an event loop."""
    report, _ = await acalibrate_read(options, llm, progress, replaces=REPORT)
    return report


async def acalibrate_read(  # noqa: PLR0913  the CLI's places, each named at the call
    options: Options,
    llm: LLM | None = None,
    progress: Progress | None = None,
    *,
    config: Path | None = None,
    replaces: Path | None = None,
    fix: str = PYTHON_FIX,
) -> tuple[Report, dict[str, CalibrationSet]]:
    """`acalibrate`, and the whole sets it read (the gate deciding on them next reads them once).
    `config`: the settings file the history and the policy are found by; `replaces`: the folder
    of the report this run replaces (its judges tell a changed one even in a new history, and its
    times when a verdict file was first calibrated); `fix`: how the caller records a refused run."""
    options = replace(options, policy=options.policy or Policy.load(config))
    before = _replaced(replaces)
    if not options.keep_history:
        if options.verdicts is not None:
            options = _older(options, recorded_times(before, None))
        # Nothing is added to the history, but what its rechecks found still holds.
        options = _after_findings(options, findings_of(options.history, config))
        return await ameasure_read(options, llm, progress, unrecorded=fix)
    located = locate(options.history, config)
    # A damaged, read-only or foreign history stops the run before any judge is paid for.
    with History.open(located) as db:
        key = evidence_key()
        if key is not None:  # findings whose seal fails get a lapse now: all before it is old
            db.vouch(key)
    if options.verdicts is not None:
        options = _older(options, recorded_times(before, located))
    options = _after_findings(options, read_findings(located))
    fresh, read = await ameasure_read(options, llm, progress)
    fresh = await asyncio.to_thread(record_history, fresh, located, before=before)
    return fresh, read


def _after_findings(options: Options, findings: Findings) -> Options:
    """`options` knowing when a recheck found each judge changed: its older cached answers are not
    evidence any more (the later of that and any time the caller gave)."""
    given = options.changed_at
    later = {c: max(t, given.get(c, t)) for c, t in changed_at(findings).items()}
    return replace(options, changed_at={**given, **later})


def _older(options: Options, first: dict[str, float]) -> Options:
    """`options` with each verdict file first calibrated at the earlier of what the report and
    the history say and what the caller gave: a verdict file is never younger than either, nor
    first calibrated after now."""
    now = time.time()
    given = {d: min(t, now) for d, t in options.recorded_times.items()}
    earlier = {d: min(t, given.get(d, t)) for d, t in first.items()}
    return replace(options, recorded_times={**given, **earlier})


def recorded_times(before: Report | None, history: str | Path | None) -> dict[str, float]:
    """When each verdict file (by digest) was first calibrated, by the report the run replaces
    and the history: what recorded verdicts without a time of their own count their age from."""
    first: dict[str, float] = {}

    def seen(digest: str | None, at: datetime | None) -> None:
        if digest and at is not None:
            at = at if at.tzinfo else at.replace(tzinfo=UTC)
            first[digest] = min(first.get(digest, at.timestamp()), at.timestamp())

    for c in before.criteria if before is not None else []:
        seen((c.inputs or {}).get("verdicts"), c.evidence_at)
    for p in before.pairwise if before is not None else []:
        seen(p.inputs.get("verdicts"), p.evidence_at)
    if history is not None:
        with History.open(history) as db:
            for run in db.runs(purpose="calibrate"):
                seen(run.verdicts_sha, run.created_at)
    return first


def _replaced(out: Path | None) -> Report | None:
    """The report a run replaces, when it can be read (a damaged one is simply replaced)."""
    if out is None:
        return None
    try:
        return Report.read_if_any(out)
    except InputError:
        return None
