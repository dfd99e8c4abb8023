"""A pairwise criterion's part of report.md and of the terminal (plain code over the report's
parts: the models are only types here, so the shells that format numbers start light). Text
from the files (ids, tags, who labelled, the model) is made inert for Markdown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from judgekit.report.text import fmt_number, md_escape

if TYPE_CHECKING:
    from judgekit.report.pairwise import PairwiseReport


def _interval(value: Any) -> str:
    if not isinstance(value, list) or None in value:
        return "n/a"
    return f"[{value[0]:.3f}, {value[1]:.3f}]"


def pair_table(reports: Sequence[PairwiseReport]) -> str:
    """The pairwise criteria as a Markdown table: accuracy, consistency and position preference,
    each with its interval."""
    rows = [
        "| criterion | pairs | accuracy | consistency | inconsistent (1st / 2nd won) | "
        "first-position share (p) | no verdict (no answer) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in reports:
        f = r.figures
        rows.append(
            f"| {md_escape(r.id)} | {f['n']} | "
            f"{fmt_number(f['accuracy'])} {_interval(f['accuracy_interval'])} | "
            f"{fmt_number(f['consistency'])} {_interval(f['consistency_interval'])} | "
            f"{f['inconsistent']} ({f['first_won']} / {f['second_won']}) | "
            f"{fmt_number(f['first_share'])} (p={f['position_p']:.3g}) | "
            f"{f['n'] - f['decided']} ({f['abstained']}) |"
        )
    return "\n".join(rows) + "\n"


_AS = {"tie": "a tie", "abstain": "an abstention"}


def pair_lines(r: PairwiseReport) -> list[str]:
    """A pairwise criterion's judge, who labelled, its slices and the pairs it did not decide."""
    f = r.figures
    lines = [
        f"### {md_escape(r.id)}",
        "",
        f"Judge: pairwise, model {md_escape(r.model or 'n/a')}, source {md_escape(r.source)}; "
        "each pair asked in both "
        f"orders; an inconsistent pair counts as {_AS[r.inconsistent]}, never a win.",
        f"Pairs a position decided (won in both orders): first {fmt_number(f['first_decided'])} "
        f"{_interval(f['first_decided_interval'])}, second {fmt_number(f['second_decided'])} "
        f"{_interval(f['second_decided_interval'])}.",
        "Labels by: " + ", ".join(f"{n} {md_escape(k)}" for k, n in sorted(r.labels_by.items())),
        "",
    ]
    if r.slices:
        lines += [
            "| tag | pairs | accuracy | consistency | inconsistent |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {md_escape(tag)} | {s.n} | {fmt_number(s.accuracy)} | "
            f"{fmt_number(s.consistency)} | {s.inconsistent} |"
            for tag, s in r.slices.items()
        ]
        lines.append("")
    if r.probes:
        lines += [
            "| probe | tried | moved off the label | abstained | rate [95%] | keeps the label "
            "because |",
            "|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {p.probe} | {p.tried} | {p.flipped} | {p.abstained} | {fmt_number(p.rate)} "
            f"{_interval(p.interval)} | {p.why} |"
            for p in r.probes
        ]
        lines.append("")
    wrong = r.disagreements
    if wrong:
        lines.append(
            "Pairs not decided as labelled (report.html shows their replies side by side):"
        )
        lines += [
            f"- {md_escape(d.id)}: label {d.label}, {d.outcome} "
            f"(a first: {d.a_first or 'no answer'}; "
            f"b first: {d.b_first or 'no answer'})"
            for d in wrong[:20]
        ]
        if len(wrong) > 20:
            lines.append(f"- ... and {len(wrong) - 20} more (report.json lists all)")
        lines.append("")
    return lines


def pair_terminal(reports: Sequence[PairwiseReport]) -> str:
    """The pairwise criteria as the terminal shows them: one line each."""
    rows = [
        ("pairwise criterion", "pairs", "no verdict", "accuracy", "consistency", "1st / 2nd won")
    ]
    for r in reports:
        f = r.figures
        rows.append(
            (
                r.id,
                str(f["n"]),
                str(f["n"] - f["decided"]),
                fmt_number(f["accuracy"]),
                fmt_number(f["consistency"]),
                f"{f['first_won']} / {f['second_won']}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
