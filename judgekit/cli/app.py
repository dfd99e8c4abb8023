"""The `judgekit` command: a lazy group of commands, each loaded from its module only when it runs,
so `judgekit --help` and `judgekit gate` start at once; and what every command shares — the exit
codes, how an error is shown, and the options several commands take.

Exit codes: 0 done (gate: PASS); 1 gate FAIL, DRIFT or a monitor alert; 2 a usage or input error
(the message names the file and the fix); 3 gate INCONCLUSIVE; 4 the judge could not be run
(provider down, credentials refused, every call failed); 130 interrupted (re-run to resume).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, NoReturn

import click
import typer
from typer.core import TyperGroup

from judgekit.errors import InputError
from judgekit.secrets import redact
from judgekit.version import version

EXIT_OK, EXIT_GATE_FAIL, EXIT_INPUT, EXIT_INCONCLUSIVE, EXIT_JUDGE, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130

# Each command: the module that defines it, and its line in `judgekit --help` (said here once; the
# command's own help is its docstring).
COMMANDS: dict[str, tuple[str, str]] = {
    "calibrate": ("judgekit.cli.calibrate", "Run each criterion's judge over its calibration set and measure agreement."),
    "gate": ("judgekit.cli.gate", "May suites that rely on these judges run? Exit 0 PASS, 1 FAIL, 3 INCONCLUSIVE."),
    "plan": ("judgekit.cli.calibrate", "How many labelled examples the gate needs, at observed or assumed rates."),
    "validate": ("judgekit.cli.calibrate", "Check every criterion, set (and verdict file) without running a judge."),
    "history": ("judgekit.cli.watch", "List the calibration runs kept in the history."),
    "drift": ("judgekit.cli.watch", "Has a judge changed? Compare two runs of a criterion."),
    "recheck": ("judgekit.cli.watch", "Re-ask a frozen canary of the calibrated judge and compare (daily)."),
    "monitor": ("judgekit.cli.watch", "Production pass rates per window, corrected for the judge, with alerts."),
    "label": ("judgekit.cli.label", "Label examples blind, or review disagreements, in a local page."),
    "import": ("judgekit.cli.project", "Turn another tool's judge results into a verdict file."),
    "init": ("judgekit.cli.project", "Start a project: criteria, sets, settings, a CI workflow, a pytest example."),
    "schema": ("judgekit.cli.calibrate", "Write the JSON Schemas the criterion and set files can point to."),
}


def short(name: str) -> str:
    """A command's line in `judgekit --help`."""
    return COMMANDS[name][1]


class Commands(TyperGroup):
    """The commands, each built from its module on first use; `--help` lists them from COMMANDS."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module = importlib.import_module(COMMANDS[name][0])
        return typer.main.get_group(module.app).get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, line) for name, (_, line) in COMMANDS.items()])


def commands() -> typer.Typer:
    """The Typer a command module registers its commands on."""
    return typer.Typer(add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False)


app = typer.Typer(
    cls=Commands, add_completion=False, no_args_is_help=True, rich_markup_mode=None, pretty_exceptions_enable=False,
    help="Calibrate LLM judges against human labels, and gate eval suites on judges that can be trusted.\n\n"
         "Exit codes: 0 done / gate PASS, 1 gate FAIL (or DRIFT, an alert), 2 usage or input error, "
         "3 gate INCONCLUSIVE, 4 the judge could not be run, 130 interrupted.")


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"judgekit {version()}")
        raise typer.Exit()


@app.callback()
def root(show: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True,
                                   help="Print the installed version and exit.")) -> None:
    """The root of the group (its options); every command is a module of its own."""


def fail(error: Exception) -> NoReturn:
    """Show a judgekit error without a traceback (no secret in it) and exit with its code."""
    typer.echo(f"error: {redact(str(error))}", err=True)
    raise typer.Exit(EXIT_INPUT if isinstance(error, InputError) else EXIT_JUDGE)


def check_split(split: str | None) -> None:
    """`--split` takes dev or test (or nothing: every example)."""
    if split not in (None, "dev", "test"):
        fail(InputError.one("--split", "", f"{split!r} is not a split; use dev or test"))


# Options several commands share.
REPORT = Path(".judgekit/reports/latest")
HISTORY_PATH = Path(".judgekit/history.sqlite")


def criteria_option(text: str = "Folder of criterion files (*.yaml).") -> Any:
    return typer.Option(Path("criteria"), help=text)


def sets_option(text: str = "Folder of calibration sets (<criterion-id>.jsonl/.yaml/.csv).") -> Any:
    return typer.Option(Path("calibration_sets"), help=text)


def config_option(text: str = "Settings file (judgekit.yaml or pyproject.toml); default: the first of those "
                               "in the current folder.") -> Any:
    return typer.Option(None, "--config", help=text)


def report_option(text: str = "A report.json, or the folder holding it.") -> Any:
    return typer.Option(REPORT, help=text)


def criterion_ids_option(text: str = "Only this criterion (repeatable).") -> Any:
    return typer.Option(None, "--criterion", "-c", help=text)


def history_option(text: str = "Calibration history (SQLite).") -> Any:
    return typer.Option(HISTORY_PATH, "--history", help=text)

