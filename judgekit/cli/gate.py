"""`judgekit gate`: reads plain files only (no model is called, none built), so a pre-suite gate
step costs about what starting Python does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from judgekit.cli.app import (commands, config_option, criteria_option, criterion_ids_option, fail, report_option,
                              sets_option, short)
from judgekit.cli.ci import append_step_summary, write_junit
from judgekit.cli.terminal import show_decisions
from judgekit.errors import JudgekitError
from judgekit.gate.decision import Gate
from judgekit.gate.result import GateResult

app = commands()


def decide(report_path: Path, criteria: Path, sets: Path, config: Optional[Path], criterion_ids: list[str],
           junit: Optional[Path]) -> GateResult:
    """The gate's decisions on the report at `report_path`, written to JUnit and the CI step summary."""
    result = Gate.from_project(criteria, sets, config, criterion_ids or None).check_path(report_path,
                                                                                       criterion_ids or None)
    if junit is not None:
        write_junit(result, junit)
    append_step_summary(result)
    return result


def finish(result: GateResult, as_json: bool, report_json: Optional[dict] = None) -> None:
    """Print the decisions (or JSON) and exit with the gate's code."""
    if as_json:
        data = result.to_dict() if report_json is None else {"report": report_json, "gate": result.to_dict()}
        typer.echo(json.dumps(data, indent=2))
    else:
        show_decisions(result)
    raise typer.Exit(result.exit_code)


@app.command("gate", short_help=short("gate"))
def gate(
    report: Path = report_option(),
    criterion: Optional[List[str]] = criterion_ids_option("Gate only this criterion (repeatable)."),
    criteria: Path = criteria_option("Folder of criterion files: a report about other files is stale."),
    sets: Path = sets_option("Folder of calibration sets."),
    config: Optional[Path] = config_option("Gate policy file (judgekit.yaml or pyproject.toml); default: the "
                                           "first of those in the current folder."),
    junit: Optional[Path] = typer.Option(None, help="Write the decisions as JUnit XML (suite judge-calibration)."),
    as_json: bool = typer.Option(False, "--json", help="Print the decisions as JSON."),
) -> None:
    """May suites that rely on these judges run? Decided from the report's per-example verdicts and
    the files on disk; no model is called. Exit 0 PASS, 1 FAIL, 3 INCONCLUSIVE, 2 bad input."""
    path = report / "report.json" if report.is_dir() else report
    if not path.exists():
        typer.echo(f"no report at {path}: every criterion is blocked until `judgekit calibrate` writes one", err=True)
    try:
        result = decide(path, criteria, sets, config, list(criterion or []), junit)
    except JudgekitError as error:
        fail(error)
    finish(result, as_json)
