"""What a person sees on a terminal: the calibration table (rich, coloured, on a terminal; plain in
a pipe), a dry run's estimates, a progress line, and the gate's decisions with coloured statuses
(click strips colours from pipes and files).
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from io import StringIO
from typing import TYPE_CHECKING

import click

from judgekit.gate.result import GateResult
from judgekit.report.render import fmt_number, printable, terminal_text, to_table

if TYPE_CHECKING:
    from rich.console import JustifyMethod

    from judgekit.judging.dry_run import Estimate
    from judgekit.report.model import Report

STATUS_COLOURS = {"PASS": "green", "FAIL": "red", "INCONCLUSIVE": "yellow"}


def render_table(report: Report) -> str:
    """The calibration table: a rich one on a terminal, plain text (no colour codes) otherwise."""
    if not sys.stdout.isatty():
        return to_table(report)
    from rich.console import Console  # rich only on a terminal: a pipe gets the plain table at once
    from rich.table import Table

    table = Table(show_edge=False, header_style="bold")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("criterion", "left"),
        ("n", "right"),
        ("abst", "right"),
        ("TPR", "right"),
        ("TNR", "right"),
        ("kappa", "right"),
        ("kappa 95%", "right"),
        ("disagree", "right"),
    )
    for name, justify in columns:
        table.add_column(name, justify=justify)
    for c in report.criteria:
        kappa = c.metrics.get("cohen_kappa")
        colour = "red" if kappa is None or kappa < 0.4 else ("yellow" if kappa < 0.7 else "green")
        low, high = c.intervals.get("cohen_kappa", (None, None))
        table.add_row(
            c.id,
            str(c.n),
            str(c.abstained),
            fmt_number(c.metrics.get("tpr"), 2),
            fmt_number(c.metrics.get("tnr"), 2),
            f"[{colour}]{fmt_number(kappa, 2)}[/]",
            f"[{fmt_number(low, 2)}, {fmt_number(high, 2)}]",
            str(len(c.disagreements)),
        )
    buffer = StringIO()
    Console(
        file=buffer, force_terminal=True, width=shutil.get_terminal_size((120, 24)).columns
    ).print(table)
    return buffer.getvalue().rstrip()


def render_estimates(estimates: list[Estimate], stop_early: bool = False) -> str:
    """`calibrate --dry-run`: per criterion, the calls to make, the answers cached, the prompt
    tokens and the cost at most; then how these are estimated (judgekit.judging.dry_run)."""
    rows = [("criterion", "judge", "calls", "cached", "prompt tokens", "cost at most")]
    notes = []
    for e in estimates:
        if e.source != "live":
            rows.append(
                (e.criterion, "by code" if e.source == "code" else e.source, "0", "-", "-", "-")
            )
            continue
        cost = "unknown" if e.cost_at_most is None else f"${e.cost_at_most:,.4f}"
        rows.append(
            (
                e.criterion,
                e.model or "",
                f"{e.calls:,}",
                f"{e.cached:,}",
                f"~{e.prompt_tokens:,}",
                cost,
            )
        )
        if e.unknown:
            notes.append(
                f"{e.criterion}: and the verification calls of {e.unknown:,} extraction(s) still "
                "to make, which depend on their answers (not counted)"
            )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            cell.ljust(w) if i < 2 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    notes += [
        *(["--stop-early may stop before the whole set: these are at most"] if stop_early else []),
        "cached: answers in the cache, younger than max_age and readable; the others are calls "
        "to make",
        "prompt tokens: characters / 4 of the rendered messages (an estimate)",
        "cost at most: litellm's price for those tokens and each answer at its max_tokens "
        "(unknown: no price)",
        "dry run: nothing was asked, nothing written",
    ]
    return "\n".join([*lines, "", *notes])


def show_decisions(result: GateResult) -> None:
    """One line per criterion (with its judge's model beside the agent's, when the agent's is
    declared), then the overall status."""
    for d in result.decisions:
        models = (
            f" [judge {printable(d.model or 'none named')}; agent {printable(result.agent_model)}]"
            if result.agent_model
            else ""
        )
        # the colour codes are judgekit's own; the rest escaped, as by `say`
        click.echo(
            click.style(f"{d.status:<12}", fg=STATUS_COLOURS.get(d.status))
            + terminal_text(f" {d.criterion}: {d.summary}{models}")
        )
    click.echo(
        "gate: " + click.style(result.status, fg=STATUS_COLOURS.get(result.status), bold=True)
    )


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
