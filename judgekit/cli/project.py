"""Starting and feeding a project: `judgekit init` scaffolds it, `judgekit import` turns another
tool's judge results into a verdict file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from judgekit.cli.app import fail, short
from judgekit.cli.options import group, typer_app
from judgekit.cli.scaffold import init as scaffold
from judgekit.errors import JudgekitError
from judgekit.inputs.files import write_atomic
from judgekit.judging.importers import import_verdicts

app = typer_app()


@app.command("init", short_help=short("init"))
def init(
    root: Path = typer.Argument(Path("."), help="The project folder."),
    force: bool = typer.Option(False, "--force", help="Overwrite files that exist."),
    ci: str = typer.Option("github", "--ci", help="The CI recipe: github (.github/workflows/judgekit.yml) "
                           "or gitlab (.gitlab-ci.yml)."),
) -> None:
    """Start a project: criteria, calibration sets, judgekit.yaml, a CI recipe (GitHub Actions or
    GitLab CI: calibrate and gate, keep the answers and the history, recheck daily), a .gitignore
    for what runs write under .judgekit/, and a pytest example."""
    try:
        written = scaffold(root, force, ci)
    except JudgekitError as error:
        fail(error)
    for path in written:
        typer.echo(f"wrote {path}")
    typer.echo("next: `judgekit calibrate -c no-email-address --gate` runs as written; set judge.model in "
               "criteria/confirms-refund.yaml (and its key in the environment) to calibrate the LLM judge")
    typer.echo("commit all of these; .judgekit/.gitignore keeps out what runs write there (cached answers, the "
               "history, reports), which CI keeps in its own cache")


@app.command("import", short_help=short("import"))
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
    options = {"promptfoo": {"id_field": id_field, "assertion": assertion}, "inspect": {"scorer": scorer, "id_field": id_field},
               "pydantic-evals": {"evaluator": evaluator}, "deepeval": {"metric": metric},
               "csv": {"id_col": id_col, "verdict_col": verdict_col, "reason_col": reason_col,
                       "criterion_col": criterion_col}}.get(format, {})
    try:
        records = import_verdicts(format, file, criterion, **options)
        write_atomic(out, "".join(r.line() for r in records))
    except JudgekitError as error:
        fail(error)
    decided = sum(1 for r in records if r.passed is not None)
    typer.echo(f"wrote {len(records)} verdicts ({decided} decided, {len(records) - decided} abstained) to {out}")


commands = group(app)
