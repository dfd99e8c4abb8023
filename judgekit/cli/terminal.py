"""What a person sees on a terminal: the calibration table (rich, coloured, on a terminal; plain in
a pipe), a progress line, and the gate's decisions with coloured statuses (click strips colours
from pipes and files).
"""

from __future__ import annotations

import shutil
import sys
from io import StringIO
from typing import TYPE_CHECKING, Callable

import click

from judgekit.gate.result import GateResult
from judgekit.report.render import fmt_number, to_table

if TYPE_CHECKING:
    from judgekit.report.model import Report

STATUS_COLOURS = {"PASS": "green", "FAIL": "red", "INCONCLUSIVE": "yellow"}


def render_table(report: "Report") -> str:
    """The calibration table: a rich one on a terminal, plain text (no colour codes) otherwise."""
    if not sys.stdout.isatty():
        return to_table(report)
    from rich.console import Console  # rich only on a terminal: a pipe gets the plain table at once
    from rich.table import Table

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
    Console(file=buffer, force_terminal=True, width=shutil.get_terminal_size((120, 24)).columns).print(table)
    return buffer.getvalue().rstrip()


def show_decisions(result: GateResult) -> None:
    """One line per criterion, then the overall status."""
    for d in result.decisions:
        click.echo(click.style(f"{d.status:<12}", fg=STATUS_COLOURS.get(d.status)) + f" {d.criterion}: {d.summary}")
    click.echo("gate: " + click.style(result.status, fg=STATUS_COLOURS.get(result.status), bold=True))


def terminal_progress(label: str) -> Callable[[int, int], None] | None:
    """A one-line progress counter on stderr when it is a terminal; nothing otherwise."""
    if not sys.stderr.isatty():
        return None
    step = 0

    def show(done: int, total: int) -> None:
        nonlocal step
        if done == total or done - step >= max(1, total // 200):
            step = done
            sys.stderr.write(f"\r{label}: {done}/{total} ({100 * done // total}%)")
            if done == total:
                sys.stderr.write("\n")
            sys.stderr.flush()

    return show
