"""`judgekit gate`: reads plain files only (no model is called, none built), so a pre-suite gate
step costs about what starting Python does. Plain click: it does not load typer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from judgekit import watch
from judgekit.cli.app import REPORT, fail, say, short
from judgekit.cli.ci import append_step_summary, write_junit
from judgekit.cli.terminal import show_decisions
from judgekit.errors import JudgekitError
from judgekit.gate.decision import Gate
from judgekit.gate.result import GateResult
from judgekit.signing import UNSEALED


def decide(
    report_path: Path,
    criteria: Path,
    sets: Path,
    config: Path | None,
    criterion_ids: list[str],
    junit: Path | None,
    agent_model: str | None = None,
    history: str | None = None,
) -> GateResult:
    """The gate's decisions on `report_path`, deciding also on the findings of the history
    (`history`, else the one judgekit uses here), written to JUnit and the CI step summary."""
    findings = watch.findings_of(history, config)
    if UNSEALED in findings:  # say which history that was: a team may keep its own elsewhere
        say(
            f"note: the drift findings of {watch.findings_place(history, config)} could not be "
            "verified under the evidence key; `--history` names the history the calibration "
            "kept",
            err=True,
        )
    gate = Gate.from_project(
        criteria, sets, config, criterion_ids or None, agent_model=agent_model
    ).with_findings(findings)
    result = gate.check_path(report_path, criterion_ids or None)
    if junit is not None:
        write_junit(result, junit)
    append_step_summary(result)
    return result


def finish(result: GateResult, as_json: bool, report_json: dict[str, Any] | None = None) -> None:
    """Print the decisions (or JSON) and exit with the gate's code."""
    if as_json:
        data = (
            result.to_dict()
            if report_json is None
            else {"report": report_json, "gate": result.to_dict()}
        )
        say(json.dumps(data, indent=2))
    else:
        show_decisions(result)
    raise click.exceptions.Exit(result.exit_code)


PATH = click.Path(path_type=Path)


@click.group()
def commands() -> None:
    """The gate's command group (one command)."""


@commands.command("gate", short_help=short("gate"))
@click.option(
    "--report",
    type=PATH,
    default=REPORT,
    show_default=True,
    help="A report.json, or the folder holding it.",
)
@click.option(
    "--criterion", "-c", "criterion", multiple=True, help="Gate only this criterion (repeatable)."
)
@click.option(
    "--criteria",
    type=PATH,
    default=Path("criteria"),
    show_default=True,
    help="Folder of criterion files: a report about other files is stale.",
)
@click.option(
    "--sets",
    type=PATH,
    default=Path("calibration_sets"),
    show_default=True,
    help="Folder of calibration sets.",
)
@click.option(
    "--config",
    type=PATH,
    default=None,
    help="Gate policy file (judgekit.yaml or pyproject.toml); "
    "default: the first of those in the current folder.",
)
@click.option(
    "--junit",
    type=PATH,
    default=None,
    help="Write the decisions as JUnit XML (suite judge-calibration).",
)
@click.option(
    "--agent-model",
    default=None,
    metavar="MODEL",
    help="The model of the agent under test: a judge of the same model (aliases included) FAILs. "
    "Default: gate.agent_model of the policy.",
)
@click.option(
    "--history",
    default=None,
    metavar="PATH|URL",
    help="The calibration history whose recheck findings the gate heeds (a SQLite path or a "
    "postgresql:// URL); default: $JUDGEKIT_HISTORY_URL, else history_url in the settings, else "
    ".judgekit/history.sqlite.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the decisions as JSON.")
def gate(
    report: Path,
    criterion: tuple[str, ...],
    criteria: Path,
    sets: Path,
    config: Path | None,
    junit: Path | None,
    agent_model: str | None,
    history: str | None,
    as_json: bool,
) -> None:
    """May suites that rely on these judges run? Decided from the report's per-example verdicts and
    the files on disk; no model is called. Exit 0 PASS, 1 FAIL, 3 INCONCLUSIVE, 2 bad input."""
    path = report / "report.json" if report.is_dir() else report
    if not path.exists():
        say(
            f"no report at {path}: every criterion is blocked until `judgekit calibrate` "
            "writes one",
            err=True,
        )
    try:
        result = decide(path, criteria, sets, config, list(criterion), junit, agent_model, history)
    except JudgekitError as error:
        fail(error)
    finish(result, as_json)
