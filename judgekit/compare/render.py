"""compare.json for people: the candidates' table, the paired verdicts, the recommendation (plain
text; names from users' files made safe for a terminal)."""

from __future__ import annotations

from collections.abc import Sequence

from judgekit.compare.model import Comparison, Paired
from judgekit.judging.dry_run import Estimate
from judgekit.report.render import fmt_number, printable

_HEAD = (
    "candidate",
    "gate",
    "TPR",
    "TNR",
    "kappa",
    "kappa 95%",
    "abst",
    "$/1k",
    "p50",
    "vs best",
    "vs baseline",
)


def _paired(p: Paired | None) -> str:
    if p is None:
        return "-"
    word = {"better": "better", "worse": "worse", "indistinguishable": "same?"}[p.verdict]
    more = f", +{p.examples_to_separate} ex" if p.examples_to_separate else ""
    return f"{word} (p {p.p_adjusted:.3g}{more})"


def _align(rows: Sequence[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    )


def table(c: Comparison) -> str:
    rows = [_HEAD]
    for x in c.candidates:
        low, high = x.intervals.get("cohen_kappa", (None, None))
        rows.append(
            (
                printable(x.name) + (" *" if x.name == c.best else ""),
                x.gate,
                fmt_number(x.metrics.get("tpr"), 2),
                fmt_number(x.metrics.get("tnr"), 2),
                fmt_number(x.metrics.get("cohen_kappa"), 2),
                f"[{fmt_number(low, 2)}, {fmt_number(high, 2)}]",
                str(x.abstained),
                fmt_number(x.cost.per_1000_verdicts, 4)
                if x.cost.per_1000_verdicts is not None
                else "unknown",
                # as wide as 999.99 s: the table keeps its shape whatever the latency
                f"{x.cost.latency_p50_s:.2f} s".rjust(8)
                if x.cost.latency_p50_s is not None
                else "-",
                _paired(x.vs_best),
                _paired(x.vs_baseline),
            )
        )
    separating = sum(e.separates for e in c.examples)
    lines = [
        f"{printable(c.criterion)}: {len(c.candidates)} candidates on "
        f"{c.labelled_pass + c.labelled_fail} labelled "
        f"examples ({c.labelled_pass} known-good, {c.labelled_fail} known-bad); "
        f"{separating} separate them",
        "",
        _align(rows),
        "",
        f"* best (most examples right, then kappa): {printable(c.best)}. "
        "p50: an answer's latency. Paired: exact McNemar on the examples one got right "
        "and the other "
        "did not; vs best adjusted over every pair (Bonferroni), vs baseline by Holm; "
        "same? = indistinguishable "
        "on this set, +N ex = labelled examples more that would separate them at the observed "
        "rates.",
    ]
    r = c.recommendation
    if r.candidate is not None:
        lines.append(f"\nrecommended: {printable(r.why)}")
    else:
        lines.append(f"\nrecommended: none. {printable(r.why)}")
        lines += [f"  blocked by: {printable(reason)}" for reason in r.blocked_by]
    if r.front:
        lines.append(
            f"cost-vs-kappa front (cheapest first): {', '.join(printable(n) for n in r.front)}"
        )
    return "\n".join(lines)


def estimates(found: dict[str, Estimate]) -> str:
    """`compare --dry-run`: per candidate the calls to make, those cached, tokens, cost at most."""
    rows = [("candidate", "source", "calls", "cached", "prompt tokens", "cost at most $")]
    for name, e in found.items():
        rows.append(
            (
                printable(name),
                e.source,
                str(e.calls) + (f" (+{e.unknown} unknown)" if e.unknown else ""),
                str(e.cached),
                str(e.prompt_tokens),
                "unknown" if e.cost_at_most is None else f"{e.cost_at_most:.4f}",
            )
        )
    total = sum(e.calls for e in found.values())
    return (
        _align(rows)
        + f"\n\n{total} calls to make; nothing was asked (prompt tokens are characters / 4; "
        "answers are counted at max_tokens, so the cost is an upper bound)"
    )
