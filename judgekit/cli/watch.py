"""The commands that watch a judge over time: history, drift, recheck and monitor.

Exit codes as the rest of the CLI: 0 no drift / no alert, 1 DRIFT / an alert, 2 a usage or input
error, 4 the judge could not be run (recheck).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import typer

from judgekit.cli.app import (
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    REPORT,
    check_split,
    fail,
    say,
    short,
)
from judgekit.cli.options import (
    config_option,
    criteria_option,
    criterion_ids_option,
    group,
    history_option,
    sets_option,
    typer_app,
)
from judgekit.errors import InputError, JudgekitError
from judgekit.gate.decision import Gate
from judgekit.inputs.policy import parse_duration
from judgekit.inputs.settings import DriftPolicy, MonitorPolicy, load_settings
from judgekit.report.model import Report
from judgekit.report.render import fmt_number, printable
from judgekit.watch.counts import counts_sql, read_count_file
from judgekit.watch.drift import Drift, between, pairs
from judgekit.watch.findings import findings_of
from judgekit.watch.history import History
from judgekit.watch.monitor import watch
from judgekit.watch.recheck import recheck as recheck_runs
from judgekit.watch.scan import count_samples
from judgekit.watch.store import locate
from judgekit.watch.transfer import export_history, import_history

app = typer_app()


history_app = typer_app()
app.add_typer(history_app, name="history", short_help=short("history"))


@history_app.callback(invoke_without_command=True)
def history_(
    ctx: typer.Context,
    criterion: list[str] | None = criterion_ids_option(),
    history: str | None = history_option(),
    config: Path | None = config_option(),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per run, for scripts."),
) -> None:
    """List the calibration runs kept in the history, oldest first; `export` and `import` move them
    between histories (a SQLite file and a PostgreSQL database)."""
    # `judgekit history --history X export F`: X is the export's
    if ctx.invoked_subcommand is not None:
        ctx.obj = {"history": history, "config": config}
        return
    try:
        with History.open(locate(history, config), create=False) as db:
            runs = [r for r in db.runs() if not criterion or r.criterion in criterion]
    except JudgekitError as error:
        fail(error)
    if as_json:
        for r in runs:
            say(
                json.dumps(
                    {
                        "id": r.id,
                        "criterion": r.criterion,
                        "kind": r.kind or "yes_no",
                        "created_at": r.created_at.isoformat(),
                        "purpose": r.purpose,
                        "model": r.model,
                        "prompt_sha": r.prompt_sha,
                        "parameters": r.parameters,
                        "set_fingerprint": r.set_fingerprint,
                        "split": r.split,
                        "source": r.source,
                        "n": r.n,
                        "abstained": r.abstained,
                        "metrics": r.metrics,
                        "verdicts_sha": r.verdicts_sha,
                    }
                )
            )
        return
    say(
        f"{'run':>5}  {'when (UTC)':16}  {'criterion':24}  {'purpose':9}  {'model':24}  "
        f"{'prompt':8}  "
        f"{'set':8}  {'n':>5}  {'TPR':>5}  {'TNR':>5}  {'kappa':>6}"
    )
    for r in runs:
        m = r.metrics
        figures = (  # a pairwise run has no TPR or TNR: its accuracy and consistency instead
            f"accuracy {fmt_number(m.get('accuracy'), 2)}, "
            f"consistency {fmt_number(m.get('consistency'), 2)} (pairs)"
            if r.kind == "pairwise"
            else f"{fmt_number(m.get('tpr'), 2):>5}  {fmt_number(m.get('tnr'), 2):>5}  "
            f"{fmt_number(m.get('cohen_kappa'), 2):>6}"
        )
        say(
            f"{r.id:>5}  {r.created_at:%Y-%m-%d %H:%M}  {printable(r.criterion)[:24]:24}  "
            f"{printable(r.purpose):9}  {printable(r.model or '-')[:24]:24}  "
            f"{printable(r.prompt_sha or '-')[:8]:8}  {printable(r.set_fingerprint)[:8]:8}  "
            f"{r.n:>5}  {figures}"
        )
    if not runs:
        say("no runs yet")


@history_app.command("export")
def history_export(
    ctx: typer.Context,
    out: Path = typer.Argument(..., help="The JSON Lines file to write (replaced whole)."),
    history: str | None = history_option("The history to export."),
    config: Path | None = config_option(),
) -> None:
    """Write every run (with its verdicts), look at a test split and label change to FILE."""
    try:
        with History.open(_given(ctx, history, config), create=False) as db:
            counts = export_history(db, out)
    except JudgekitError as error:
        fail(error)
    say(
        f"exported to {out}: "
        + ", ".join(f"{n} {kind.replace('_', ' ')}(s)" for kind, n in counts.items())
    )


@history_app.command("import")
def history_import(
    ctx: typer.Context,
    source: Path = typer.Argument(..., help="A file written by `judgekit history export`."),
    history: str | None = history_option("The history to add to (created when new)."),
    config: Path | None = config_option(),
) -> None:
    """Add the runs, looks and label changes of FILE that the history lacks (by their ids: importing
    twice adds nothing)."""
    try:
        with History.open(_given(ctx, history, config)) as db:
            counts = import_history(db, source)
            shown = db.path
    except JudgekitError as error:
        fail(error)
    say(
        f"imported into {shown}: "
        + ", ".join(
            f"{added} {kind.replace('_', ' ')}(s) added, {skipped} already there"
            for kind, (added, skipped) in counts.items()
        )
    )


def _given(ctx: typer.Context, history: str | None, config: Path | None) -> str | Path:
    """The history a subcommand of `judgekit history` works on: its --history, or the group's."""
    outer = ctx.obj or {}
    if history is not None and outer.get("history") is not None and history != outer["history"]:
        raise InputError.one(
            "--history", "", "given twice, with two different histories; give it once"
        )
    return locate(
        history if history is not None else outer.get("history"), config or outer.get("config")
    )


def _report_drifts(drifts: list[Drift], as_json: bool, notes: Sequence[str] = ()) -> None:
    if as_json:
        say(json.dumps({"drifts": [d.to_dict() for d in drifts], "notes": list(notes)}, indent=2))
    else:
        for d in drifts:
            say("\n".join(d.lines()))
        if not drifts:
            say("nothing to compare yet: NO DRIFT found, and none could be")
        for note in notes:
            say(note)
    raise typer.Exit(max((d.exit_code for d in drifts), default=0))


@app.command("drift", short_help=short("drift"))
def drift(
    criterion: list[str] | None = criterion_ids_option(),
    before: int | None = typer.Option(
        None, help="Run id to compare from (see `judgekit history`)."
    ),
    after: int | None = typer.Option(None, help="Run id to compare to."),
    history: str | None = history_option(),
    config: Path | None = config_option(),
    as_json: bool = typer.Option(False, "--json", help="The comparisons as JSON."),
) -> None:
    """Has a judge changed? Compare two runs of a criterion (default: its last two on the same set).
    Exit 0 NO DRIFT, 1 DRIFT, 2 bad input."""
    try:
        policy = load_settings(DriftPolicy, "drift", config)
        with History.open(locate(history, config), create=False) as db:
            found, notes = pairs(db, list(criterion or []), before, after)
            drifts = [between(db, b, a, policy) for b, a in found]
    except JudgekitError as error:
        fail(error)
    _report_drifts(drifts, as_json, notes)


@app.command("recheck", short_help=short("recheck"))
def recheck(
    criterion: list[str] | None = criterion_ids_option(),
    size: int | None = typer.Option(
        None,
        min=2,
        help="Examples in each criterion's frozen canary subset (default: as many as finding a "
        "drop of 0.2 in TPR or TNR 80% of the time needs, at the calibrated rates).",
    ),
    criteria: Path = criteria_option(),
    sets: Path = sets_option(),
    split: str | None = typer.Option(
        None, help="Draw the canary from this split (dev or test), as calibrated."
    ),
    model: str | None = typer.Option(
        None, help="Must be the calibrated model when given (it is taken from the calibration)."
    ),
    api_base: str | None = typer.Option(
        None,
        help="The calibrated endpoint with its credentials (the history keeps it without them).",
    ),
    timeout: float = typer.Option(60.0, min=1.0, help="Seconds to wait for one judge answer."),
    history: str | None = history_option(),
    config: Path | None = config_option(),
    as_json: bool = typer.Option(False, "--json", help="The comparisons as JSON."),
) -> None:
    """The cheap daily check for a silent model update: re-ask a small frozen subset of each LLM or
    claims criterion's set, without the cache, of exactly the judge its last calibration measured,
    and compare. Exit 0 NO DRIFT, 1 DRIFT, 2 bad input, 4 the judge could not be run."""
    check_split(split)
    notes: list[str] = []
    try:
        policy = load_settings(DriftPolicy, "drift", config)
        with History.open(locate(history, config), create=False) as db:
            drifts = recheck_runs(
                db,
                criteria,
                sets,
                list(criterion or []),
                size,
                policy,
                split,
                model,
                api_base,
                timeout,
                notes,
            )
    except JudgekitError as error:
        fail(error)
    except KeyboardInterrupt:
        say("\ninterrupted", err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    _report_drifts(drifts, as_json, notes)


@app.command("monitor", short_help=short("monitor"))
def monitor(
    file: Path | None = typer.Argument(
        None,
        help="Judged production samples: a JSONL, CSV or Parquet file, "
        "a quoted glob ('samples/*.parquet') or a folder of them, with timestamp, "
        "criterion, passed and optionally trace_id (with --counts: a file of counts "
        "per criterion and window).",
    ),
    report: Path | None = typer.Option(
        None,
        help="Calibration report, for the rates corrected for each judge's "
        f"TPR and TNR [default: {REPORT} when there is one].",
    ),
    criteria: Path = typer.Option(
        Path("criteria"),
        help="Folder of criterion files: the report corrects a "
        "criterion's rates only where the gate passes it.",
    ),
    sets: Path = typer.Option(
        Path("calibration_sets"), help="Folder of calibration sets (as for the gate)."
    ),
    window: str | None = typer.Option(
        None, help="Window width, like 1d, 6h or 1w (default: the policy's)."
    ),
    config: Path | None = config_option(),
    as_json: bool = typer.Option(False, "--json", help="Every window and alert as JSON."),
    plot: Path | None = typer.Option(None, help="Write a PNG of pass rate over time here."),
    recent: int = typer.Option(
        1,
        min=1,
        help="Exit 1 when one of each criterion's last N windows alerts "
        "(older alerts are listed, not acted on).",
    ),
    counted: bool = typer.Option(
        False,
        "--counts",
        help="FILE holds counts computed elsewhere (--print-sql's "
        "query): criterion, window_start, verdicts, passes, abstentions.",
    ),
    print_sql: str | None = typer.Option(
        None,
        "--print-sql",
        metavar="TABLE",
        help="Print the SQL that counts TABLE's judged samples per criterion and window, and exit.",
    ),
    dialect: str = typer.Option(
        "duckdb", help="--print-sql's dialect: duckdb, postgres, bigquery, snowflake or spark."
    ),
) -> None:
    """Pass rate per criterion per window, corrected for the judge where the gate passes its
    calibration, alerting on significant drops against the earlier windows. Exit 0 no recent
    alert, 1 an alert in the last --recent windows, 2 bad input."""
    try:
        policy = load_settings(MonitorPolicy, "monitor", config)
        if window is not None:
            try:
                parse_duration(window)
            except ValueError as error:
                say(f"error: --window: {error}", err=True)
                raise typer.Exit(EXIT_INPUT) from None
            policy = policy.model_copy(update={"window": window})
        if print_sql is not None:
            say(counts_sql(print_sql, policy.window, dialect))
            raise typer.Exit(0)
        if file is None:
            raise InputError.one(
                "judgekit monitor",
                "FILE",
                "give the file of judged samples (or of counts, with "
                "--counts), or --print-sql TABLE",
            )
        # given, and not there: a typo
        if report is not None and not Report.locate(report).is_file():
            raise InputError.one(
                report,
                "--report",
                "no calibration report here; give the folder (or its "
                "report.json) that `judgekit calibrate` wrote, or leave --report out for raw rates",
            )
        counts = (
            read_count_file(file, policy.window) if counted else count_samples(file, policy.window)
        )
        calibration, gate, notes = Report.read_if_any(report or REPORT), None, []
        if calibration is None:
            notes.append(
                f"no calibration report at {REPORT}: rates are not corrected for the judge"
            )
        else:
            # A report is trusted where the gate passes it, against the criteria and sets on disk.
            try:
                gate = (
                    Gate.from_project(criteria, sets, config)
                    .with_findings(findings_of(None, config))
                    .check_path(Report.locate(report or REPORT))
                )
            except InputError as error:
                more = (
                    f" (and {len(error.problems) - 1} more problems)"
                    if len(error.problems) > 1
                    else ""
                )
                notes.append(
                    "warning: raw rates only: the calibration report cannot be checked against "
                    f"{criteria} "
                    f"and {sets}: {error.problems[0]}{more}"
                )
                calibration = None
        result = watch(counts, policy, calibration, gate, notes)
        if plot is not None:
            result.plot(plot)
    except JudgekitError as error:
        fail(error)
    say(json.dumps(result.to_dict(), indent=2) if as_json else "\n".join(result.lines()))
    raise typer.Exit(1 if result.recent_alerts(recent) else 0)


commands = group(app)
