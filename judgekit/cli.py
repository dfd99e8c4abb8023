"""The `judgekit` command: parse, call the pipeline, render, exit with a documented code.

Exit codes: 0 done (gate: PASS); 1 gate FAIL; 2 a usage or input error (the message names the file
and the fix); 3 gate INCONCLUSIVE; 4 the judge could not be run (provider down, credentials
refused); 130 interrupted (re-run to resume). Nothing heavier than typer
is imported until a command runs, so `judgekit --help` starts at once.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

EXIT_OK, EXIT_GATE_FAIL, EXIT_INPUT, EXIT_INCONCLUSIVE, EXIT_JUDGE, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130

app = typer.Typer(
    add_completion=False, no_args_is_help=True, rich_markup_mode=None, pretty_exceptions_enable=False,
    help="Calibrate LLM judges against human labels, and gate eval suites on judges that can be trusted.\n\n"
         "Exit codes: 0 done / gate PASS, 1 gate FAIL, 2 usage or input error, 3 gate INCONCLUSIVE, "
         "4 the judge could not be run, 130 interrupted.")


def _fail(error: Exception) -> None:
    """Show a judgekit error without a traceback and exit with its code."""
    from judgekit.errors import InputError
    from judgekit.secrets import redact

    typer.echo(f"error: {redact(str(error))}", err=True)
    raise typer.Exit(EXIT_INPUT if isinstance(error, InputError) else EXIT_JUDGE)


@app.command()
def calibrate(
    criteria: Path = typer.Option(Path("criteria"), help="Folder of criterion files (*.yaml)."),
    sets: Path = typer.Option(Path("calibration_sets"), help="Folder of calibration sets (<criterion-id>.jsonl/.yaml/.csv)."),
    criterion: Optional[List[str]] = typer.Option(None, "--criterion", "-c", help="Calibrate only this criterion (repeatable)."),
    verdicts: Optional[Path] = typer.Option(None, help="Recorded verdicts (JSONL or CSV) instead of calling a model."),
    model: Optional[str] = typer.Option(None, help="Judge model for every LLM criterion, e.g. openai/gpt-4o-mini, "
                                        "anthropic/claude-3-5-haiku-latest, local/smollm2. With --verdicts: the "
                                        "model that produced them, recorded in the report for the gate."),
    api_base: Optional[str] = typer.Option(None, help="Base URL of the provider (OpenAI-compatible servers)."),
    concurrency: int = typer.Option(16, min=1, max=1024, help="Judge calls in flight at once."),
    trials: Optional[int] = typer.Option(None, min=1, max=100, help="Ask each example K times (overrides judge.trials)."),
    out: Path = typer.Option(Path(".judgekit/reports/latest"), help="Where report.json and report.md are written."),
    cache_dir: Path = typer.Option(Path(".judgekit/cache"), help="On-disk cache of judge answers."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Ask the model again; neither read nor write the cache."),
    timeout: float = typer.Option(60.0, min=1.0, help="Seconds to wait for one judge answer."),
    split: Optional[str] = typer.Option(None, help="Use only examples of this split (dev or test)."),
    seed: int = typer.Option(0, help="Seed of the bootstrap intervals."),
    plain_answers: bool = typer.Option(False, "--plain-answers", help="Do not ask the provider for structured output."),
    stop_early: bool = typer.Option(False, "--stop-early", help="Judge in seeded random order and stop each "
                                    "criterion once the gate's decision on its whole set can no longer change."),
    gate: bool = typer.Option(False, "--gate", help="Gate the new report too; exit as `judgekit gate` does."),
    config: Optional[Path] = typer.Option(None, help="Gate policy file (judgekit.yaml or pyproject.toml)."),
    junit: Optional[Path] = typer.Option(None, help="With --gate: write the decisions as JUnit XML."),
    via: str = typer.Option("auto", help="auto: openai/<model> over the lean OpenAI-compatible path, the rest "
                            "through litellm; litellm: everything through litellm."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only where the report was written."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON (and, with --gate, the gate's "
                                 "decisions) instead of tables; nothing else on stdout."),
    history: Path = typer.Option(Path(".judgekit/history.sqlite"), help="Calibration history (SQLite) this run "
                                 "is added to, for `judgekit drift`."),
    no_history: bool = typer.Option(False, "--no-history", help="Do not add this run to the history."),
) -> None:
    """Run the judge of each criterion over its calibration set and report agreement with the labels."""
    from judgekit.errors import JudgekitError
    from judgekit.judge import terminal_progress
    from judgekit.pipeline import Options
    from judgekit.pipeline import calibrate as run
    if split not in (None, "dev", "test") or via not in ("auto", "litellm"):
        typer.echo("error: --split takes dev or test; --via takes auto or litellm", err=True)
        raise typer.Exit(EXIT_INPUT)
    options = Options(criteria_dir=criteria, sets_dir=sets, criterion_ids=criterion or (), verdicts=verdicts,
                      model=model, api_base=api_base, concurrency=concurrency, trials=trials,
                      cache_dir=None if no_cache else cache_dir, timeout_s=timeout, split=split, seed=seed,
                      structured=not plain_answers, via=via, stop_early=stop_early)
    try:
        if criterion and (out / "report.json").is_file():
            # A partial run merges into the report there: check it can be read before judging anything.
            from judgekit.report import Report
            from judgekit.verdicts import load_recorded

            Report.read(out / "report.json")
            if (out / "verdicts.jsonl").is_file():
                load_recorded(out / "verdicts.jsonl")
        if not no_history:  # a damaged, read-only or foreign history stops the run before any judge is paid for
            from judgekit.history import History

            History.open(history).close()
        if stop_early:
            from judgekit.policy import Policy

            options.policy = Policy.load(config)  # the thresholds early stopping settles against
        fresh = run(options, progress=None if quiet or as_json else terminal_progress("judging"))
        if not no_history:
            from judgekit.pipeline import record_history

            fresh = record_history(fresh, history)
        # Calibrating some criteria keeps the others' results in the same report.
        report = fresh.write(out, merge=bool(criterion))
        from judgekit.html import write_html

        write_html(report, out, criteria, sets, config, None if no_history else history)
    except JudgekitError as error:
        _fail(error)
    except KeyboardInterrupt:
        typer.echo("\ninterrupted: every answer received so far is cached; run the same command again to resume",
                   err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    if as_json:
        if gate:
            _gate(report, str(out / "report.json"), criteria, sets, config, list(criterion or []), junit,
                  as_json=True, report_json=fresh.model_dump(mode="json"))
        typer.echo(fresh.model_dump_json(indent=2))
        return
    if not quiet:
        typer.echo(render_table(fresh))
        written = {c.id: c.calibrated_at for c in report.criteria}
        superseded = [c.id for c in fresh.criteria if written.get(c.id) != c.calibrated_at]
        kept = len(report.criteria) - len(fresh.criteria) + len(superseded)
        if kept:
            typer.echo(f"\n{kept} other {'criterion' if kept == 1 else 'criteria'} kept from the previous report in {out}")
        for cid in superseded:
            typer.echo(f"\n{cid}: a calibration that started after this one is already in {out}; this run's "
                       "result for it was not written")
        for c in fresh.criteria:
            for warning in c.warnings:
                typer.echo(f"\nwarning: {c.id}: {warning}")
        abstained = sum(c.abstained for c in fresh.criteria)
        if abstained:
            typer.echo(f"\n{abstained} abstention(s): see the disagreements in {out / 'report.md'}")
    typer.echo(f"report: {out / 'report.json'}")
    if gate:  # the report as written (another run's newer result included), checked against its verdicts
        _gate(report, str(out / "report.json"), criteria, sets, config, list(criterion or []), junit)


def render_table(report) -> str:
    """The calibration table: a rich one on a terminal, plain text (no colour codes) otherwise."""
    from judgekit.report import to_table

    if not sys.stdout.isatty():
        return to_table(report)
    from io import StringIO

    from rich.console import Console
    from rich.table import Table

    from judgekit.report import fmt_number

    table = Table(show_edge=False, header_style="bold")
    for name, justify in (("criterion", "left"), ("n", "right"), ("abst", "right"), ("TPR", "right"),
                          ("TNR", "right"), ("kappa", "right"), ("kappa 95%", "right"), ("disagree", "right")):
        table.add_column(name, justify=justify)
    for c in report.criteria:
        kappa = c.metrics.get("cohen_kappa")
        colour = "red" if kappa is None or kappa < 0.4 else ("yellow" if kappa < 0.7 else "green")
        low, high = c.intervals.get("cohen_kappa", (None, None))
        table.add_row(c.id, str(c.n), str(c.abstained), fmt_number(c.metrics.get("tpr"), 2),
                      fmt_number(c.metrics.get("tnr"), 2), f"[{colour}]{fmt_number(kappa, 2)}[/]",
                      f"[{fmt_number(low, 2)}, {fmt_number(high, 2)}]", str(len(c.disagreements)))
    buffer = StringIO()
    import shutil

    Console(file=buffer, force_terminal=True, width=shutil.get_terminal_size((120, 24)).columns).print(table)
    return buffer.getvalue().rstrip()


STATUS_COLOURS = {"PASS": "green", "FAIL": "red", "INCONCLUSIVE": "yellow"}


def _gate(report, report_path: str, criteria: Path, sets: Path, config: Optional[Path], criterion_ids: List[str],
          junit: Optional[Path], as_json: bool = False, report_json: Optional[dict] = None) -> None:
    """Decide, print one line per criterion, write CI outputs, and exit with the gate's code."""
    from judgekit.ci import append_step_summary, write_junit
    from judgekit.errors import JudgekitError
    from judgekit.gate import Gate

    try:
        result = Gate.from_project(criteria, sets, config, criterion_ids or None).check(
            report, criterion_ids or None, report_path)
        if junit is not None:
            write_junit(result, junit)
        append_step_summary(result)
    except JudgekitError as error:
        _fail(error)
    if as_json:
        import json

        data = result.to_dict() if report_json is None else {"report": report_json, "gate": result.to_dict()}
        typer.echo(json.dumps(data, indent=2))
        raise typer.Exit(result.exit_code)
    for d in result.decisions:  # colours only on a terminal: click strips them from pipes and files
        typer.echo(typer.style(f"{d.status:<12}", fg=STATUS_COLOURS.get(d.status)) + f" {d.criterion}: {d.summary}")
    typer.echo("gate: " + typer.style(result.status, fg=STATUS_COLOURS.get(result.status), bold=True))
    raise typer.Exit(result.exit_code)


@app.command()
def gate(
    report: Path = typer.Option(Path(".judgekit/reports/latest"), help="A report.json, or the folder holding it."),
    criterion: Optional[List[str]] = typer.Option(None, "--criterion", "-c", help="Gate only this criterion (repeatable)."),
    criteria: Path = typer.Option(Path("criteria"), help="Folder of criterion files: a report about others is stale."),
    sets: Path = typer.Option(Path("calibration_sets"), help="Folder of calibration sets."),
    config: Optional[Path] = typer.Option(None, help="Gate policy file (judgekit.yaml or pyproject.toml); "
                                          "default: the first of those in the current folder."),
    junit: Optional[Path] = typer.Option(None, help="Write the decisions as JUnit XML (suite judge-calibration)."),
    as_json: bool = typer.Option(False, "--json", help="Print the decisions as JSON."),
) -> None:
    """May suites that rely on these judges run? Reads reports only; exit 0 PASS, 1 FAIL, 3 INCONCLUSIVE."""
    from judgekit.errors import InputError
    from judgekit.report import Report

    path = Report.locate(report)
    try:
        loaded = Report.read_if_any(path)
    except InputError as error:
        _fail(error)
    if loaded is None:
        typer.echo(f"no report at {path}: every criterion is blocked until `judgekit calibrate` writes one", err=True)
    _gate(loaded, str(path), criteria, sets, config, list(criterion or []), junit, as_json=as_json)


@app.command()
def plan(
    report: Path = typer.Option(Path(".judgekit/reports/latest"), help="A report.json, or the folder holding it."),
    criterion: Optional[List[str]] = typer.Option(None, "--criterion", "-c", help="Plan only this criterion."),
    criteria: Path = typer.Option(Path("criteria"), help="Folder of criterion files."),
    sets: Path = typer.Option(Path("calibration_sets"), help="Folder of calibration sets."),
    config: Optional[Path] = typer.Option(None, help="Gate policy file (judgekit.yaml or pyproject.toml)."),
    assume_tpr: Optional[float] = typer.Option(None, min=0.0, max=1.0, help="Plan for this TPR, not the observed one."),
    assume_tnr: Optional[float] = typer.Option(None, min=0.0, max=1.0, help="Plan for this TNR, not the observed one."),
) -> None:
    """How many labelled known-good and known-bad examples the gate needs, at observed or assumed rates."""
    from judgekit.errors import JudgekitError
    from judgekit.gate import plan as make_plan
    from judgekit.pipeline import load_inputs
    from judgekit.policy import Policy
    from judgekit.report import Report

    if (assume_tpr is None) != (assume_tnr is None):
        typer.echo("error: give both --assume-tpr and --assume-tnr, or neither", err=True)
        raise typer.Exit(EXIT_INPUT)
    try:
        loaded = Report.read_if_any(report)
        found, on_disk = load_inputs(criteria, sets, list(criterion or []))
        lines = make_plan(loaded, Policy.load(config), on_disk, [c.id for c in found],
                          (assume_tpr, assume_tnr) if assume_tpr is not None else None)
    except JudgekitError as error:
        _fail(error)
    for line in lines:
        typer.echo(line)


@app.command()
def validate(
    criteria: Path = typer.Option(Path("criteria"), help="Folder of criterion files."),
    sets: Path = typer.Option(Path("calibration_sets"), help="Folder of calibration sets."),
    verdicts: Optional[Path] = typer.Option(None, help="Also check a recorded-verdicts file."),
) -> None:
    """Check every criterion, calibration set (and verdict file) without running any judge."""
    from judgekit.errors import InputError
    from judgekit.pipeline import load_inputs
    from judgekit.verdicts import load_recorded

    problems = []  # of every file, listed together
    try:
        loaded, loaded_sets = load_inputs(criteria, sets)
    except InputError as error:
        problems += error.problems
    if verdicts is not None:
        try:
            load_recorded(verdicts)
        except InputError as error:
            problems += error.problems
    if problems:
        _fail(InputError(problems))
    examples = sum(len(s.examples) for s in loaded_sets.values())
    typer.echo(f"ok: {len(loaded)} criteria, {examples} labelled examples")


@app.command()
def init(
    root: Path = typer.Argument(Path("."), help="The project folder."),
    force: bool = typer.Option(False, "--force", help="Overwrite files that exist."),
) -> None:
    """Start a project: criteria, calibration sets, judgekit.yaml, a CI workflow and a pytest example."""
    from judgekit.errors import JudgekitError
    from judgekit.scaffold import init as scaffold

    try:
        written = scaffold(root, force)
    except JudgekitError as error:
        _fail(error)
    for path in written:
        typer.echo(f"wrote {path}")
    typer.echo("next: `judgekit calibrate -c no-email-address --gate` runs as written; set judge.model in "
               "criteria/confirms-refund.yaml (and its key in the environment) to calibrate the LLM judge")


@app.command()
def schema(
    out: Path = typer.Option(Path(".judgekit/schema"), help="Folder for criterion.schema.json and example.schema.json."),
) -> None:
    """Write the JSON Schemas that criterion YAML files and calibration sets can point to."""
    import json

    from judgekit.criteria import criterion_schema
    from judgekit.files import write_atomic
    from judgekit.sets import Example

    write_atomic(out / "criterion.schema.json", json.dumps(criterion_schema(), indent=2) + "\n")
    write_atomic(out / "example.schema.json", json.dumps(Example.model_json_schema(), indent=2) + "\n")
    typer.echo(f"wrote {out / 'criterion.schema.json'} and {out / 'example.schema.json'}\n"
               f"point a YAML file at it with: # yaml-language-server: $schema={out / 'criterion.schema.json'}")


from judgekit import cli_watch  # noqa: E402,F401  (registers history, drift, recheck and monitor on `app`)


def main() -> None:
    app(prog_name="judgekit")


if __name__ == "__main__":
    # Run as a script this file is `__main__`; the commands registered themselves on `judgekit.cli.app`.
    from judgekit.cli import main as registered_main

    sys.exit(registered_main())
