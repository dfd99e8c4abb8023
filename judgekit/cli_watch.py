"""The commands that watch a judge over time: history, drift, recheck and monitor.

Exit codes as the rest of the CLI: 0 no drift / no alert, 1 DRIFT / an alert, 2 a usage or input
error, 4 the judge could not be run (recheck).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from judgekit.cli import EXIT_INPUT, EXIT_INTERRUPTED, _fail, app

HISTORY = typer.Option(Path(".judgekit/history.sqlite"), "--history", help="Calibration history (SQLite).")
REPORT = Path(".judgekit/reports/latest")
CONFIG = typer.Option(None, "--config", help="Settings file (judgekit.yaml or pyproject.toml).")


@app.command("history")
def history_(
    criterion: Optional[List[str]] = typer.Option(None, "--criterion", "-c", help="Only this criterion (repeatable)."),
    history: Path = HISTORY,
    as_json: bool = typer.Option(False, "--json", help="One JSON object per run, for scripts."),
) -> None:
    """List the calibration runs kept in the history, oldest first."""
    from judgekit.errors import JudgekitError
    from judgekit.history import History
    from judgekit.report import fmt_number, printable

    try:
        with History.open(history, create=False) as db:
            runs = [r for r in db.runs() if not criterion or r.criterion in criterion]
    except JudgekitError as error:
        _fail(error)
    if as_json:
        for r in runs:
            typer.echo(json.dumps({"id": r.id, "criterion": r.criterion, "created_at": r.created_at.isoformat(),
                                   "purpose": r.purpose, "model": r.model, "prompt_sha": r.prompt_sha,
                                   "parameters": r.parameters, "set_fingerprint": r.set_fingerprint,
                                   "split": r.split, "source": r.source, "n": r.n, "abstained": r.abstained,
                                   "metrics": r.metrics}))
        return
    typer.echo(f"{'run':>5}  {'when (UTC)':16}  {'criterion':24}  {'purpose':9}  {'model':24}  {'prompt':8}  "
               f"{'set':8}  {'n':>5}  {'TPR':>5}  {'TNR':>5}  {'kappa':>6}")
    for r in runs:
        m = r.metrics
        typer.echo(f"{r.id:>5}  {r.created_at:%Y-%m-%d %H:%M}  {printable(r.criterion)[:24]:24}  "
                   f"{printable(r.purpose):9}  {printable(r.model or '-')[:24]:24}  "
                   f"{printable(r.prompt_sha or '-')[:8]:8}  {printable(r.set_fingerprint)[:8]:8}  {r.n:>5}  "
                   f"{fmt_number(m.get('tpr'), 2):>5}  {fmt_number(m.get('tnr'), 2):>5}  "
                   f"{fmt_number(m.get('cohen_kappa'), 2):>6}")
    if not runs:
        typer.echo("no runs yet")


def _pairs(db, criteria: list[str], before: Optional[int], after: Optional[int]):
    """The runs to compare: the two named, or per criterion its last run and the latest earlier
    run on the same calibration set; and a note for each criterion that has none."""
    from judgekit.errors import InputError
    from judgekit.report import printable

    if (before is None) != (after is None):
        raise InputError.one("--before/--after", "", "give both run ids, or neither")
    if before is not None:
        return [(db.run(before), db.run(after))], []
    pairs, notes = [], []
    runs = db.runs()
    for name in criteria or sorted({r.criterion for r in runs}):
        mine = [r for r in runs if r.criterion == name]
        shown = printable(name)  # a name from the history file or the command line, printed below
        if not mine:
            raise InputError.one(db.path, shown, "no run of this criterion in the history")
        last = mine[-1]
        earlier = [r for r in mine[:-1] if r.set_fingerprint == last.set_fingerprint]
        if earlier:
            pairs.append((earlier[-1], last))
        elif len(mine) > 1:
            notes.append(f"{shown}: skipped, its last run (run {last.id}) is the first on its calibration set as it "
                         f"is now; compare across sets with --before {mine[-2].id} --after {last.id}")
        else:
            notes.append(f"{shown}: skipped, it has a single run (run {last.id})")
    if not pairs:
        raise InputError.one(db.path, "", "nothing to compare: " + "; ".join(notes))
    return pairs, notes


def _report_drifts(drifts, as_json: bool, notes: list[str] = ()) -> None:
    if as_json:
        typer.echo(json.dumps({"drifts": [d.to_dict() for d in drifts], "notes": list(notes)}, indent=2))
    else:
        for d in drifts:
            typer.echo("\n".join(d.lines()))
        for note in notes:
            typer.echo(note)
    raise typer.Exit(max(d.exit_code for d in drifts))


@app.command()
def drift(
    criterion: Optional[List[str]] = typer.Option(None, "--criterion", "-c", help="Only this criterion (repeatable)."),
    before: Optional[int] = typer.Option(None, help="Run id to compare from (see `judgekit history`)."),
    after: Optional[int] = typer.Option(None, help="Run id to compare to."),
    history: Path = HISTORY,
    config: Optional[Path] = CONFIG,
    as_json: bool = typer.Option(False, "--json", help="The comparisons as JSON."),
) -> None:
    """Has a judge changed? Compare two runs of a criterion (default: its last two on the same set).
    Exit 0 NO DRIFT, 1 DRIFT, 2 bad input."""
    from judgekit.drift import compare
    from judgekit.errors import JudgekitError
    from judgekit.history import History
    from judgekit.policy import DriftPolicy, load_settings

    try:
        policy = load_settings(DriftPolicy, "drift", config)
        with History.open(history, create=False) as db:
            pairs, notes = _pairs(db, list(criterion or []), before, after)
            drifts = [compare(b, a, db.outcomes(b.id), db.outcomes(a.id), policy) for b, a in pairs]
    except JudgekitError as error:
        _fail(error)
    _report_drifts(drifts, as_json, notes)


@app.command()
def recheck(
    criterion: Optional[List[str]] = typer.Option(None, "--criterion", "-c", help="Only this criterion (repeatable)."),
    size: int = typer.Option(10, min=2, help="Examples in each criterion's frozen canary subset."),
    criteria: Path = typer.Option(Path("criteria"), help="Folder of criterion files."),
    sets: Path = typer.Option(Path("calibration_sets"), help="Folder of calibration sets."),
    split: Optional[str] = typer.Option(None, help="Draw the canary from this split (dev or test), as calibrated."),
    model: Optional[str] = typer.Option(None, help="Must be the calibrated model when given (it is taken from "
                                        "the calibration)."),
    api_base: Optional[str] = typer.Option(None, help="The calibrated endpoint with its credentials (the "
                                           "history keeps it without them)."),
    timeout: float = typer.Option(60.0, min=1.0, help="Seconds to wait for one judge answer."),
    history: Path = HISTORY,
    config: Optional[Path] = CONFIG,
    as_json: bool = typer.Option(False, "--json", help="The comparisons as JSON."),
) -> None:
    """The cheap daily check for a silent model update: re-ask a small frozen subset of each LLM or
    claims criterion's set, without the cache, of exactly the judge its last calibration measured,
    and compare. Exit 0 NO DRIFT, 1 DRIFT, 2 bad input, 4 the judge could not be run."""
    from judgekit.errors import JudgekitError
    from judgekit.history import History
    from judgekit.policy import DriftPolicy, load_settings
    from judgekit.recheck import recheck as run

    if split not in (None, "dev", "test"):
        typer.echo("error: --split takes dev or test", err=True)
        raise typer.Exit(EXIT_INPUT)
    try:
        policy = load_settings(DriftPolicy, "drift", config)
        with History.open(history, create=False) as db:
            drifts = run(db, criteria, sets, list(criterion or []), size, policy, split, model, api_base, timeout)
    except JudgekitError as error:
        _fail(error)
    except KeyboardInterrupt:
        typer.echo("\ninterrupted", err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    _report_drifts(drifts, as_json)


@app.command()
def monitor(
    file: Path = typer.Argument(..., help="Judged production samples: JSONL, CSV or Parquet with timestamp, "
                                          "criterion, passed and optionally trace_id."),
    report: Optional[Path] = typer.Option(None, help="Calibration report, for the rates corrected for each judge's "
                                          f"TPR and TNR [default: {REPORT} when there is one]."),
    criteria: Path = typer.Option(Path("criteria"), help="Folder of criterion files: the report corrects a "
                                  "criterion's rates only where the gate passes it."),
    sets: Path = typer.Option(Path("calibration_sets"), help="Folder of calibration sets (as for the gate)."),
    window: Optional[str] = typer.Option(None, help="Window width, like 1d, 6h or 1w (default: the policy's)."),
    config: Optional[Path] = CONFIG,
    as_json: bool = typer.Option(False, "--json", help="Every window and alert as JSON."),
    plot: Optional[Path] = typer.Option(None, help="Write a PNG of pass rate over time here."),
    recent: int = typer.Option(1, min=1, help="Exit 1 when one of each criterion's last N windows alerts "
                               "(older alerts are listed, not acted on)."),
) -> None:
    """Pass rate per criterion per window, corrected for the judge where the gate passes its
    calibration, alerting on significant drops against the earlier windows. Exit 0 no recent
    alert, 1 an alert in the last --recent windows, 2 bad input."""
    from judgekit.errors import InputError, JudgekitError
    from judgekit.monitor import MonitorPolicy, read_counts, watch
    from judgekit.policy import load_settings
    from judgekit.report import Report

    try:
        policy = load_settings(MonitorPolicy, "monitor", config)
        if window is not None:
            from judgekit.policy import parse_duration

            try:
                parse_duration(window)
            except ValueError as error:
                typer.echo(f"error: --window: {error}", err=True)
                raise typer.Exit(EXIT_INPUT) from None
            policy = policy.model_copy(update={"window": window})
        if report is not None and not Report.locate(report).is_file():
            raise InputError.one(report, "--report", "no calibration report here; give the folder (or its "
                                 "report.json) that `judgekit calibrate` wrote, or leave --report out for raw rates")
        counts = read_counts(file, policy.window)
        calibration, gate, notes = Report.read_if_any(report or REPORT), None, []
        if calibration is None:
            notes.append(f"no calibration report at {REPORT}: rates are not corrected for the judge")
        else:
            try:  # a report is trusted where the gate passes it, against the criteria and sets on disk
                from judgekit.gate import Gate

                gate = Gate.from_project(criteria, sets, config).check(calibration)
            except InputError as error:
                more = f" (and {len(error.problems) - 1} more problems)" if len(error.problems) > 1 else ""
                notes.append(f"warning: raw rates only: the calibration report cannot be checked against {criteria} "
                             f"and {sets}: {error.problems[0]}{more}")
                calibration = None
        result = watch(counts, policy, calibration, gate, notes)
        if plot is not None:
            result.plot(plot)
    except JudgekitError as error:
        _fail(error)
    typer.echo(json.dumps(result.to_dict(), indent=2) if as_json else "\n".join(result.lines()))
    raise typer.Exit(1 if result.recent_alerts(recent) else 0)


@app.command()
def label(
    file: Optional[Path] = typer.Argument(None, help="JSONL or CSV of examples to label: those without 'passed'."),
    review: Optional[str] = typer.Option(None, "--review", metavar="CRITERION", help="Review this criterion's "
                                         "disagreements in the latest report and fix labels in its set."),
    criteria: Path = typer.Option(Path("criteria"), help="Folder of criterion files."),
    sets: Path = typer.Option(Path("calibration_sets"), help="Folder of calibration sets."),
    report: Path = typer.Option(Path(".judgekit/reports/latest"), help="Report whose verdicts are shown."),
    criterion: Optional[str] = typer.Option(None, "--criterion", "-c", help="With FILE: whose verdicts and "
                                            "question to show."),
    port: int = typer.Option(0, min=0, max=65535, help="Port on 127.0.0.1 (0: any free one)."),
    open_browser: bool = typer.Option(True, "--open/--no-open", help="Open the page in the browser."),
) -> None:
    """A local page to label examples blind (p pass, f fail, s skip) or review disagreements; each
    label is written back into its file at once. Ctrl-C stops it."""
    import time

    from judgekit.errors import InputError, JudgekitError
    from judgekit.label import labelling, review as reviewing, serve

    try:
        if (file is None) == (review is None):
            raise InputError.one("judgekit label", "", "give a FILE to label, or --review CRITERION")
        if review is not None:
            session = reviewing(review, criteria, sets, report)
        else:
            question = ""
            if criterion:
                from judgekit.criteria import load_criterion

                question = load_criterion(criteria / f"{criterion}.yaml").question
            session = labelling(file, report if report.is_dir() else None, criterion, question)
        server = serve(session, port)
    except JudgekitError as error:
        _fail(error)
    except OSError as error:
        typer.echo(f"error: --port {port}: {error.strerror}", err=True)
        raise typer.Exit(EXIT_INPUT) from None
    for undone in session.rolled_back:
        typer.echo(f"warning: {undone}")
    url = f"http://127.0.0.1:{server.server_port}/"
    typer.echo(f"{len(session.items)} example(s) to {'review' if review else 'label'} in {session.path}\n"
               f"open {url} (Ctrl-C to stop)")
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.shutdown()
        typer.echo(f"\nstopped; {session.written} label(s) written to {session.path}")


@app.command("import")
def import_(
    format: str = typer.Argument(..., help="promptfoo, inspect, pydantic-evals, deepeval or csv."),
    file: Path = typer.Argument(..., help="The other tool's results file."),
    out: Path = typer.Option(..., "--out", "-o", help="Verdict file to write (JSONL), for `calibrate --verdicts`."),
    criterion: Optional[str] = typer.Option(None, "--criterion", "-c", help="The criterion these verdicts are for."),
    scorer: Optional[str] = typer.Option(None, help="inspect: the scorer whose values are verdicts."),
    evaluator: Optional[str] = typer.Option(None, help="pydantic-evals: the boolean assertion to use."),
    metric: Optional[str] = typer.Option(None, help="deepeval: the metric whose success is the verdict."),
    assertion: Optional[str] = typer.Option(None, help="promptfoo: use this assertion (metric name or type) "
                                            "instead of the test's overall success."),
    id_field: Optional[str] = typer.Option(None, help="promptfoo: the test var holding the example id; "
                                           "inspect: the sample metadata key."),
    id_col: str = typer.Option("id", help="csv: the column of example ids."),
    verdict_col: str = typer.Option("passed", help="csv: the column of verdicts."),
    reason_col: Optional[str] = typer.Option(None, help="csv: a column of reasons."),
    criterion_col: Optional[str] = typer.Option(None, help="csv: a column of criterion ids."),
) -> None:
    """Turn another tool's judge results into a verdict file: `judgekit calibrate --verdicts OUT`."""
    from judgekit.errors import JudgekitError
    from judgekit.files import write_atomic
    from judgekit.importers import import_verdicts

    options = {"promptfoo": {"id_field": id_field, "assertion": assertion}, "inspect": {"scorer": scorer, "id_field": id_field},
               "pydantic-evals": {"evaluator": evaluator}, "deepeval": {"metric": metric},
               "csv": {"id_col": id_col, "verdict_col": verdict_col, "reason_col": reason_col,
                       "criterion_col": criterion_col}}.get(format, {})
    try:
        records = import_verdicts(format, file, criterion, **options)
        write_atomic(out, "".join(r.line() for r in records))
    except JudgekitError as error:
        _fail(error)
    decided = sum(1 for r in records if r.passed is not None)
    typer.echo(f"wrote {len(records)} verdicts ({decided} decided, {len(records) - decided} abstained) to {out}")
