"""The `judgekit` command: a lazy group of commands, each loaded from its module only when it runs,
so `judgekit --help` and `judgekit gate` start at once (plain click here; the commands that need
typer's annotations load it themselves, through judgekit.cli.options); and what every command
shares — the exit codes, how an error is shown.

Exit codes: 0 done (gate: PASS); 1 gate FAIL, DRIFT or a monitor alert; 2 a usage or input error
(the message names the file and the fix); 3 gate INCONCLUSIVE; 4 the judge could not be run
(provider down, credentials refused, every call failed); 130 interrupted (re-run to resume).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click

from judgekit.errors import InputError
from judgekit.report.render import json_text, terminal_text
from judgekit.secrets import redact
from judgekit.version import version

EXIT_OK, EXIT_GATE_FAIL, EXIT_INPUT, EXIT_INCONCLUSIVE, EXIT_JUDGE, EXIT_INTERRUPTED = (
    0,
    1,
    2,
    3,
    4,
    130,
)

# Each command: the module that defines it, and its line in `judgekit --help` (said here once; the
# command's own help is its docstring).
COMMANDS: dict[str, tuple[str, str]] = {
    "calibrate": (
        "judgekit.cli.calibrate",
        "Run each criterion's judge over its calibration set and measure agreement.",
    ),
    "gate": (
        "judgekit.cli.gate",
        "May suites that rely on these judges run? Exit 0 PASS, 1 FAIL, 3 INCONCLUSIVE.",
    ),
    "compare": (
        "judgekit.cli.compare",
        "Which judge? Candidates on one set: paired tests, cost, the cheapest that passes.",
    ),
    "improve": (
        "judgekit.cli.improve",
        "Make a judge agree better: search on dev, accept only on held-out test evidence.",
    ),
    "plan": (
        "judgekit.cli.calibrate",
        "How many labelled examples the gate needs, at observed or assumed rates.",
    ),
    "validate": (
        "judgekit.cli.calibrate",
        "Check every criterion, set (and verdict file) without running a judge.",
    ),
    "history": (
        "judgekit.cli.watch",
        "List the calibration runs kept in the history; export and import them.",
    ),
    "drift": ("judgekit.cli.watch", "Has a judge changed? Compare two runs of a criterion."),
    "recheck": (
        "judgekit.cli.watch",
        "Re-ask a frozen canary of the calibrated judge and compare (daily).",
    ),
    "probe": (
        "judgekit.cli.probe",
        "Can the judge be talked into a verdict? Label-preserving rewrites, judged again.",
    ),
    "monitor": (
        "judgekit.cli.watch",
        "Production pass rates per window, corrected for the judge, with alerts.",
    ),
    "label": (
        "judgekit.cli.label",
        "Label examples blind, or review disagreements, in a local page.",
    ),
    "import": (
        "judgekit.cli.project",
        "Turn another tool's results into a verdict file, or examples to label.",
    ),
    "init": (
        "judgekit.cli.project",
        "Start a project: criteria, sets, settings, a CI recipe (GitHub or GitLab), "
        "a pytest example.",
    ),
    "schema": (
        "judgekit.cli.calibrate",
        "Write the JSON Schemas the criterion and set files can point to.",
    ),
}


def short(name: str) -> str:
    """A command's line in `judgekit --help`."""
    return COMMANDS[name][1]


class Commands(click.Group):
    """The commands, each loaded from its module on first use; `--help` lists them from COMMANDS
    without loading any. A module's `commands` is a click group (`judgekit gate`), or a typer
    group that gets the rest of the command line (typer has its own click, and builds its commands
    with pydantic: the gate does not pay for that)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        found = importlib.import_module(COMMANDS[name][0]).commands
        return (
            found.get_command(ctx, name)
            if isinstance(found, click.Group)
            else _handed_over(name, found.main)
        )

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, line) for name, (_, line) in COMMANDS.items()])


def _handed_over(name: str, main: Callable[..., Any]) -> click.Command:
    """A command handing its whole command line to `main` (a typer group's), exiting as it does."""

    @click.command(
        name,
        context_settings={
            "ignore_unknown_options": True,
            "allow_extra_args": True,
            "help_option_names": [],
        },
        add_help_option=False,
    )
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def hand_over(args: tuple[str, ...]) -> None:
        main(args=[name, *args], prog_name="judgekit")

    return hand_over


@click.group(
    cls=Commands,
    context_settings={"help_option_names": ["--help"]},
    invoke_without_command=False,
    help="Calibrate LLM judges against human labels, and gate eval suites on judges that can be "
    "trusted.\n\n"
    "Exit codes: 0 done / gate PASS, 1 gate FAIL (or DRIFT, an alert), 2 usage or input error, "
    "3 gate INCONCLUSIVE, 4 the judge could not be run, 130 interrupted.",
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    help="Print the installed version and exit.",
    callback=lambda ctx, param, value: _show_version(ctx, value),
)
def app() -> None:
    """The root of the group; every command is a module of its own."""


def _show_version(ctx: click.Context, value: bool) -> None:
    if value:
        say(f"judgekit {version()}")
        ctx.exit()


def say(message: object = "", *, err: bool = False, nl: bool = True) -> None:
    """Every line the command prints: text from a file, a model or a history (an example id, a
    reason) reaches the terminal with its control and format characters escaped (`printable`), so
    an id holding ESC or U+202E cannot rewrite the screen or reverse the text around it."""
    click.echo(terminal_text(message), err=err, nl=nl)


def say_json(text: str, *, err: bool = False) -> None:
    """JSON for stdout, its control and format characters as JSON escapes: the same JSON."""
    click.echo(json_text(text), err=err)


def fail(error: Exception) -> NoReturn:
    """Show a judgekit error without a traceback (no secret in it) and exit with its code."""
    say(f"error: {redact(str(error))}", err=True)
    raise click.exceptions.Exit(EXIT_INPUT if isinstance(error, InputError) else EXIT_JUDGE)


def interrupted(cached: bool = True) -> NoReturn:
    """Ctrl-C during judging: say what was kept (a re-run resumes from the cache) and exit 130."""
    say(
        "\ninterrupted: "
        + (
            "every answer received so far is cached; run the same command again to resume"
            if cached
            else "nothing was kept (--no-cache)"
        ),
        err=True,
    )
    raise click.exceptions.Exit(EXIT_INTERRUPTED)


def check_split(split: str | None) -> None:
    """`--split` takes dev or test (or nothing: every example)."""
    if split not in (None, "dev", "test"):
        fail(InputError.one("--split", "", f"{split!r} is not a split; use dev or test"))


REPORT = Path(".judgekit/reports/latest")
