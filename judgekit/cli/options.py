"""What the typer-based commands share: the Typer each module registers its commands on, turned
into the click group the lazy root loads (`commands`), and the options several commands take.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup  # typer's own click: not a click.Group

from judgekit.cli.app import REPORT


def typer_app() -> typer.Typer:
    """The Typer a command module registers its commands on."""
    return typer.Typer(add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False)


def group(app: typer.Typer) -> TyperGroup:
    """The module's commands as the group the root loads them from (after every decorator ran)."""
    return typer.main.get_group(app)


def criteria_option(text: str = "Folder of criterion files (*.yaml).") -> Any:
    return typer.Option(Path("criteria"), help=text)


def sets_option(text: str = "Folder of calibration sets (<criterion-id>.jsonl/.yaml/.csv).") -> Any:
    return typer.Option(Path("calibration_sets"), help=text)


def config_option(
    text: str = "Settings file (judgekit.yaml or pyproject.toml); default: the first of those "
    "in the current folder.",
) -> Any:
    return typer.Option(None, "--config", help=text)


def report_option(text: str = "A report.json, or the folder holding it.") -> Any:
    return typer.Option(REPORT, help=text)


def criterion_ids_option(text: str = "Only this criterion (repeatable).") -> Any:
    return typer.Option(None, "--criterion", "-c", help=text)


# The options of the commands that ask judges (calibrate, compare, improve): said once.
def api_base_option() -> Any:
    return typer.Option(None, help="Base URL of the provider (OpenAI-compatible servers).")


def concurrency_option(text: str = "Judge calls in flight at once.") -> Any:
    return typer.Option(16, min=1, max=1024, help=text)


def cache_dir_option() -> Any:
    return typer.Option(
        Path(".judgekit/cache"),
        help="On-disk cache of judge answers (calibrate, compare and improve share it).",
    )


def no_cache_option() -> Any:
    return typer.Option(
        False, "--no-cache", help="Ask the models again; neither read nor write the cache."
    )


def timeout_option() -> Any:
    return typer.Option(60.0, min=1.0, help="Seconds to wait for one answer.")


def history_option(text: str = "Calibration history.") -> Any:
    return typer.Option(
        None,
        "--history",
        help=text + " A SQLite path or a postgresql:// URL; default: "
        "$JUDGEKIT_HISTORY_URL, else history_url in the settings, else .judgekit/history.sqlite.",
        show_default=False,
    )
