"""The report for people: report.md (every disagreement with the judge's reasoning, escaped), the
terminal table, and the small formatting rules every shell shares (judgekit.report.text: a
number, a printable name, a Markdown-safe text), re-exported here.

>>> fmt_number(float("nan")), fmt_number(0.8123, 2), printable("ok\\x1b[2J")
('n/a', '0.81', 'ok\\\\x1b[2J')
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from judgekit.report.pair_render import pair_lines, pair_table
from judgekit.report.text import (
    fmt_number as fmt_number,
    md_escape as md_escape,
    printable as printable,
)

if TYPE_CHECKING:
    from judgekit.report.model import Annotators, CriterionReport, Report
    from judgekit.report.parts import Certificate

METRIC_NAMES = (
    "tpr",
    "tnr",
    "precision",
    "npv",
    "accuracy",
    "balanced_accuracy",
    "f1",
    "f1_fail",
    "macro_f1",
    "cohen_kappa",
    "mcc",
    "prevalence",
)
INTERVAL_NAMES = ("tpr", "tnr", "precision", "accuracy", "cohen_kappa")


def finite(x: float | None) -> float | None:
    """NaN becomes None, so undefined metrics are JSON null, never 0."""
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


TEXT_LIMIT = 200  # characters of an example's input or output shown in report.md
# examples labelled by several annotators before their agreement is a ceiling worth comparing
CEILING_MIN = 20


def human_ceiling(a: Annotators) -> str:
    """The humans' agreement with each other beside the judge's with each of them, on how many
    examples; below CEILING_MIN, said to be too few to compare."""
    human = ", ".join(
        f"{md_escape(pair)} {fmt_number(k, 2)}"
        + (f" (n={a.pairwise_examples[pair]})" if pair in a.pairwise_examples else "")
        for pair, k in a.pairwise_kappa.items()
    )
    judge = ", ".join(f"{md_escape(who)} {fmt_number(k, 2)}" for who, k in a.judge_kappa.items())
    head = f"Human ceiling, on {a.examples} examples labelled by several annotators"
    if a.examples < CEILING_MIN:
        return (
            f"{head}: too few to compare the judge with (at least {CEILING_MIN} are needed); "
            "kappa between "
            f"annotators {human}"
        )
    fleiss = (
        f"Fleiss n/a: {md_escape(a.fleiss_why_not)}"
        if a.fleiss_why_not
        else f"Fleiss {fmt_number(a.fleiss_kappa, 2)} (n={a.fleiss_examples})"
    )
    return (
        f"{head}, kappa between annotators: {human} ({fleiss}, Krippendorff's "
        f"alpha {fmt_number(a.krippendorff_alpha, 2)} (n={a.examples})); the judge against each: "
        f"{judge}"
    )


def terminal_text(text: object) -> str:
    r"""Lines for a terminal: each line `printable`, the line breaks kept.

    >>> terminal_text("id ok\x07\nnext")
    'id ok\\x07\nnext'
    """
    return "\n".join(printable(line) for line in str(text).split("\n"))


def json_text(text: str) -> str:
    r"""JSON text for a terminal: a control or format character (inside a string: `json.dumps`
    writes none elsewhere) as its JSON escape, so the text is the same JSON, shown safely.

    >>> json_text('{"id": "a\u202eb"}')
    '{"id": "a\\u202eb"}'
    """
    if text.isprintable():
        return text

    def escaped(ch: str) -> str:
        if ch == "\n" or ch.isprintable() or ch == " ":
            return ch
        code = ord(ch)
        if code > 0xFFFF:  # a surrogate pair, as JSON writes a character beyond the BMP
            code -= 0x10000
            return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
        return f"\\u{code:04x}"

    return "".join(escaped(ch) for ch in text)


def _interval(pair: tuple[float | None, float | None] | None) -> str:
    if not pair or pair[0] is None or pair[1] is None:
        return ""
    return f"[{pair[0]:.2f}, {pair[1]:.2f}]"


def _verdict_word(value: bool | None) -> str:
    return "abstained" if value is None else ("pass" if value else "fail")


def to_markdown(report: Report) -> str:
    """The report as Markdown (report.md): a section per criterion."""
    lines = [
        "# judgekit calibration report",
        "",
        f"judgekit {report.judgekit_version}, {report.created_at.isoformat(timespec='seconds')}",
        "",
    ]
    for c in report.criteria:
        lines += _summary_lines(c)
        lines += _detail_lines(c)
        lines += _disagreement_lines(c)
        lines.append("")
    if report.pairwise:
        lines += ["## Pairwise criteria", "", pair_table(report.pairwise)]
        for p in report.pairwise:
            lines += pair_lines(p)
    return "\n".join(lines)


def labels_said(labels_by: dict[str, int]) -> str:
    """Who made the labels, in words: `38 human, 2 model:gpt-4o`, and what was assumed."""
    words = ", ".join(f"{n} {made}" for made, n in sorted(labels_by.items(), key=lambda x: -x[1]))
    if any(made.endswith("(assumed)") for made in labels_by):
        words += " (assumed: the set does not say who made them; add made_by to its records)"
    return words


def _summary_lines(c: CriterionReport) -> list[str]:
    """A criterion's heading, judge, warnings and examples, then its metrics and confusion table."""
    judge = c.judge
    lines = [f"## {c.id}", ""]
    if judge:
        lines.append(
            f"Judge: {judge.kind}"
            + (f", model {md_escape(judge.model)}" if judge.model else "")
            + (f", {md_escape(judge.source)}" if judge.source != "live" else "")
        )
    for warning in c.warnings:
        lines += [f"> Warning: {md_escape(warning)}", ""]
    lines += [
        f"Examples: {c.n} ({c.labelled_pass} labelled pass, {c.labelled_fail} labelled fail), "
        f"abstained: {c.abstained}",
        "",
    ]
    if c.design:
        lines += [md_escape(c.design.words()) + ".", ""]
    if c.labels_by:
        lines += [f"Labels: {md_escape(labels_said(c.labels_by))}.", ""]
    if c.labels_changed:
        lines += [
            f"{c.labels_changed} label(s) changed since the previous calibration (`judgekit label "
            "--review`; the history keeps each change).",
            "",
        ]
    lines += ["| metric | value | 95% interval |", "|---|---|---|"]
    for name in METRIC_NAMES:
        lines.append(
            f"| {name} | {fmt_number(c.metrics.get(name))} | {_interval(c.intervals.get(name))} |"
        )
    k = c.confusion
    lines += [
        "",
        "| | judge pass | judge fail |",
        "|---|---|---|",
        f"| labelled pass | {k.tp} (TP) | {k.fn} (FN) |",
        f"| labelled fail | {k.fp} (FP) | {k.tn} (TN) |",
        "",
    ]
    return lines


def _detail_lines(c: CriterionReport) -> list[str]:
    """What a criterion's report holds beyond its metrics: consistency, the human ceiling, the
    selective certificate, slices, claim stages and usage, each when there is one."""
    lines: list[str] = []
    if c.consistency:
        lines.append(
            f"Self-consistency over {c.consistency.trials} trials: flip rate "
            f"{fmt_number(c.consistency.flip_rate)}, "
            f"Fleiss' kappa {fmt_number(c.consistency.fleiss_kappa)}, "
            f"unstable: {md_escape(', '.join(c.consistency.unstable)) or 'none'}"
        )
    if c.annotators:
        lines.append(human_ceiling(c.annotators))
    if c.selective:
        lines += selective_lines(c.selective)
    if c.slices:
        lines += [
            "",
            "| tag | n | abstained | TPR | TNR | accuracy | kappa |",
            "|---|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {md_escape(tag)} | {s.n} | {s.abstained} | {fmt_number(s.tpr)} | "
            f"{fmt_number(s.tnr)} | "
            f"{fmt_number(s.accuracy)} | {fmt_number(s.cohen_kappa)} |"
            for tag, s in c.slices.items()
        ]
        lines.append("")
    if c.claim_stages:
        g = c.claim_stages
        lines.append(
            f"Claim-level labels on {g.examples} examples ({g.claims} claims): verification TPR "
            f"{fmt_number(g.verification_tpr)}, TNR {fmt_number(g.verification_tnr)}; "
            "wrong verdicts "
            f"from extraction {g.extraction_errors}, from verification {g.verification_errors}"
            + (f"; {g.unreadable} unreadable" if g.unreadable else "")
        )
    if c.probes:
        lines += probe_lines(c)
    if c.usage:
        u = c.usage
        reasked = f", {u.reasked} re-asked after an unreadable answer" if u.reasked else ""
        lines.append(
            f"Usage: {u.calls} calls ({u.cached} from cache{reasked}), "
            f"{u.prompt_tokens} tokens in, "
            f"{u.completion_tokens} out, cost {fmt_number(u.cost, 4)}, "
            f"latency p50 {fmt_number(u.latency_p50_s)} s, "
            f"p95 {fmt_number(u.latency_p95_s)} s"
        )
    return lines


def probes_said(c: CriterionReport) -> str:
    """A criterion's probes in a line for a terminal: what each bought, per direction."""
    return f"{c.id} probes: " + "; ".join(
        f"{r.probe} toward {r.toward} bought {r.flipped} of {r.tried} "
        f"[{r.interval[0]:.2f}, {r.interval[1]:.2f}]"
        if r.tried
        else f"{r.probe} toward {r.toward}: nothing to try"
        for r in c.probes
    )


def probe_lines(c: CriterionReport) -> list[str]:
    """The robustness probes run with the calibration: per probe and direction, the verdicts its
    rewrites bought, and why each rewrite keeps the reply's label."""
    lines = [
        "",
        "Robustness probes (replies the judge got right, rewritten to push it towards the verdict "
        "they do not deserve):",
        "",
        "| probe | toward | tried | bought | abstained | rate | 95% interval | bought on |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {md_escape(r.probe)} | {r.toward} | {r.tried} | {r.flipped} | {r.abstained} | "
        f"{fmt_number(r.rate, 2)} | {_interval(r.interval)} | "
        f"{md_escape(', '.join(r.bought)) or '-'} |"
        for r in c.probes
    ]
    lines.append("")
    lines += [
        f"- {md_escape(name)}: keeps the label because {md_escape(why)}"
        for name, why in dict.fromkeys((r.probe, r.why) for r in c.probes)
    ]
    return lines


def _disagreement_lines(c: CriterionReport) -> list[str]:
    """A criterion's disagreements: a row each, then the claims of those with checked claims."""
    lines = ["", f"### Disagreements ({len(c.disagreements)})", ""]
    if not c.disagreements:
        return lines
    lines += [
        f"Each example as the judge saw it (texts cut at {TEXT_LIMIT} characters; "
        "report.html shows "
        "them whole), and the judge's reason:",
        "",
        "| id | label | verdict | input | output | judge's reason |",
        "|---|---|---|---|---|---|",
    ]
    for d in c.disagreements:
        # A verdict without a reason leaves that part of the cell empty, with a raw answer too.
        reason = (d.reason or "") if d.abstention is None else f"({d.abstention}) {d.reason or ''}"
        if d.raw:
            reason += f" — raw answer: {d.raw}"
        lines.append(
            f"| {md_escape(d.id)} | {_verdict_word(d.label)} | {_verdict_word(d.verdict)} | "
            f"{md_escape(d.input, TEXT_LIMIT)} | {md_escape(d.output, TEXT_LIMIT)} | "
            f"{md_escape(reason)} |"
        )
    checked = [d for d in c.disagreements if d.claims]
    if checked:
        lines += [
            "",
            "Claims of these examples (✓ supported, ✗ not supported, ? unreadable):",
            "",
        ]
        for d in checked:
            lines.append(f"- {md_escape(d.id)}:")
            for number, claim in enumerate(d.claims or [], start=1):
                mark = "?" if claim.supported is None else ("✓" if claim.supported else "✗")
                evidence = f" — evidence: “{md_escape(claim.evidence)}”" if claim.evidence else ""
                lines.append(f"  {number}. {mark} {md_escape(claim.claim)}{evidence}")
    return lines


def selective_lines(s: Certificate) -> list[str]:
    """A selective criterion's certificate: the statement, then each judge of the cascade."""
    head = (
        f"Selective judging (confidence: {s.confidence}; "
        f"target {s.min_agreement:g} at delta {s.delta:g}): "
    )
    if s.problem:
        return ["", head + s.problem]
    lines = [
        "",
        head + (s.statement or ""),
        "",
        "| judge | threshold | reaching | covered | agreement | lower bound | TPR / TNR covered |",
        "|---|---|---|---|---|---|---|",
    ]
    for stage in s.stages:
        lines.append(
            f"| {md_escape(stage.model or 'recorded')} | {fmt_number(stage.threshold)} | "
            f"{stage.reaching} | "
            f"{stage.covered} | {fmt_number(stage.agreement)} | "
            f"{fmt_number(stage.agreement_lower)} | "
            f"{fmt_number(stage.tpr)} / {fmt_number(stage.tnr)} |"
        )
    return lines + [""]


def to_table(report: Report) -> str:
    """A plain terminal table: one row per criterion."""
    header = ("criterion", "n", "abst", "TPR", "TNR", "kappa", "kappa 95%", "disagree")
    rows = [header]
    for c in report.criteria:
        m = c.metrics
        rows.append(
            (
                c.id,
                str(c.n),
                str(c.abstained),
                fmt_number(m.get("tpr"), 2),
                fmt_number(m.get("tnr"), 2),
                fmt_number(m.get("cohen_kappa"), 2),
                _interval(c.intervals.get("cohen_kappa")) or "n/a",
                str(len(c.disagreements)),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    out = []
    for index, row in enumerate(rows):
        out.append(
            "  ".join(
                cell.ljust(w) if i == 0 else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if index == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
