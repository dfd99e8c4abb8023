"""report.html: one self-contained page (inline CSS and SVG, no script, no network) per report.

Per criterion: the gate's decision, a confusion-matrix heatmap, TPR / TNR / kappa with their
intervals as a chart, agreement over past runs when there is a history, and every disagreement
with the judge's reason beside the example. Every piece of text from examples and models is
escaped: a `<script>` in a reply is shown, never run.

>>> "&lt;b&gt;" in to_html(Report(criteria=[]), title="<b>")
True
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from html import escape as html_escape
from pathlib import Path

from judgekit.gate.result import Decision
from judgekit.inputs.files import write_atomic
from judgekit.report.model import CriterionReport, Disagreement, Report
from judgekit.report.pairwise import PairwiseReport
from judgekit.report.render import fmt_number, terminal_text
from judgekit.watch.history import HistoryRun

# A backslash at a line's end joins it to the next line (the style's text is unchanged).
STYLE = """
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1d2330;\
background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:18px 28px}header h1{margin:0;font-size:21px}
header p{margin:4px 0 0;color:#c5cad3;font-size:13px}
main{padding:10px 28px 40px;max-width:1250px}
section.criterion{background:#fff;border:1px solid #dde1e7;border-radius:8px;margin:22px 0;\
padding:18px 22px}
h2{margin:0 0 4px;font-size:19px}.question{color:#4b5565;margin:0 0 12px}
.badge{display:inline-block;padding:2px 10px;border-radius:12px;font-weight:600;font-size:13px;\
margin-left:8px;
vertical-align:middle}.PASS{background:#d9f2e1;color:#10652f}.FAIL{background:#fbdcdc;color:#8c1d1d}
.INCONCLUSIVE{background:#fdf0cf;color:#7a5500}.NONE{background:#e7e9ee;color:#4b5565}
.reasons{font-size:13px;color:#4b5565;margin:4px 0 12px}
.charts{display:flex;flex-wrap:wrap;gap:28px;align-items:flex-start;margin:8px 0 6px}
.chart h3{font-size:13px;text-transform:uppercase;letter-spacing:.04em;color:#6b7585;margin:0 0 6px}
table{border-collapse:collapse;width:100%;font-size:13.5px}\
th,td{border-top:1px solid #e4e7ec;padding:7px 8px;
vertical-align:top;text-align:left}th{background:#f1f3f6;font-weight:600}
td.text{white-space:pre-wrap;word-break:break-word;max-width:420px}
.meta{font-size:13px;color:#4b5565}.claim-ok{color:#10652f}.claim-bad{color:#8c1d1d}.claim-unk{color:#7a5500}
details{margin-top:10px}summary{cursor:pointer;font-weight:600}
.context{white-space:pre-wrap;word-break:break-word;max-width:900px;font-size:14px}
"""


def escape(text: object) -> str:
    """Text of a file or a model made inert in HTML: its control and format characters escaped
    (a U+202E would reverse the text a reader sees), its markup as entities."""
    return html_escape("" if text is None else terminal_text(text), quote=True)


def _verdict(value: bool | None) -> str:
    return "abstained" if value is None else ("pass" if value else "fail")


def heatmap(c: CriterionReport) -> str:
    """The 2x2 confusion matrix as an SVG: rows labelled pass / fail, columns the judge's verdict;
    each cell shaded by its share of the row (agreement green, disagreement red)."""
    k = c.confusion
    rows = [
        ("labelled pass", (k.tp, True), (k.fn, False)),
        ("labelled fail", (k.fp, False), (k.tn, True)),
    ]
    parts = [
        '<svg xmlns="http://www.w3.org/2000/svg" width="330" height="170" role="img" '
        f'aria-label="confusion matrix: TP {k.tp}, FN {k.fn}, FP {k.fp}, TN {k.tn}">',
        '<text x="200" y="14" font-size="12" text-anchor="middle" fill="#4b5565">judge says</text>',
        '<text x="145" y="32" font-size="12" text-anchor="middle">pass</text>',
        '<text x="255" y="32" font-size="12" text-anchor="middle">fail</text>',
    ]
    for r, (name, *cells) in enumerate(rows):
        total = sum(n for n, _ in cells) or 1
        y = 40 + r * 62
        parts.append(f'<text x="82" y="{y + 36}" font-size="12" text-anchor="end">{name}</text>')
        for col, (count, agrees) in enumerate(cells):
            share = count / total
            color = (16, 128, 64) if agrees else (190, 40, 40)
            fill = f"rgba({color[0]},{color[1]},{color[2]},{0.12 + 0.78 * share:.2f})"
            x = 90 + col * 110
            parts.append(
                f'<rect x="{x}" y="{y}" width="108" height="60" rx="4" fill="{fill}"/>'
                f'<text x="{x + 54}" y="{y + 36}" font-size="19" font-weight="600" '
                'text-anchor="middle" '
                f'fill="{"#fff" if share > 0.55 else "#1d2330"}">{count}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def intervals_chart(c: CriterionReport) -> str:
    """TPR, TNR (0..1) and kappa (-1..1) as points with their 95% intervals."""
    rows = [("TPR", "tpr", 0.0), ("TNR", "tnr", 0.0), ("kappa", "cohen_kappa", -1.0)]
    width, left, right = 360, 60, 20
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="130" role="img" '
        'aria-label="TPR, TNR and kappa with 95% intervals">'
    ]
    span = width - left - right
    for i, (label, key, low_end) in enumerate(rows):
        y = 22 + i * 38
        value = c.metrics.get(key)
        low, high = c.intervals.get(key, (None, None))

        # The row's low end is bound now, as a default: each row's function is its own.
        def x(v: float, low_end: float = low_end) -> float:
            return left + span * (v - low_end) / (1 - low_end)

        parts.append(
            f'<text x="{left - 8}" y="{y + 4}" font-size="12" text-anchor="end">{label}</text>'
            f'<line x1="{left}" y1="{y}" x2="{left + span}" y2="{y}" stroke="#e4e7ec" '
            'stroke-width="6"/>'
            f'<text x="{left}" y="{y + 17}" font-size="10" fill="#8a93a2">{low_end:g}</text>'
            f'<text x="{left + span}" y="{y + 17}" font-size="10" text-anchor="end" '
            'fill="#8a93a2">1</text>'
        )
        if low is not None and high is not None:
            parts.append(
                f'<line x1="{x(low):.1f}" y1="{y}" x2="{x(high):.1f}" y2="{y}" stroke="#3763c4" '
                f'stroke-width="6" stroke-linecap="round"/>'
            )
        if value is not None:
            parts.append(
                f'<circle cx="{x(value):.1f}" cy="{y}" r="6" fill="#1d2330"/>'
                f'<text x="{x(value):.1f}" y="{y - 9}" font-size="11" text-anchor="middle">'
                f"{fmt_number(value, 2)}</text>"
            )
        else:
            parts.append(
                f'<text x="{left + 6}" y="{y - 6}" font-size="11" fill="#8a93a2">undefined</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def history_chart(runs: Sequence[HistoryRun]) -> str:
    """Kappa, TPR and TNR of a criterion's past calibration runs, oldest to newest."""
    width, height, left, top = 420, 150, 34, 12
    span_x, span_y = width - left - 12, height - top - 30
    series = [
        ("kappa", "cohen_kappa", "#1d2330"),
        ("TPR", "tpr", "#3763c4"),
        ("TNR", "tnr", "#c47a37"),
    ]
    # The axis reaches below 0 only when a kappa does (worse than chance is shown, not clipped).
    floor = -1.0 if any((r.metrics.get("cohen_kappa") or 0) < 0 for r in runs) else 0.0

    def y_of(value: float) -> float:
        return top + span_y * (1 - (value - floor) / (1 - floor))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="agreement over {len(runs)} runs">',
        f'<line x1="{left}" y1="{top + span_y}" x2="{left + span_x}" y2="{top + span_y}" '
        'stroke="#c9ced6"/>',
    ]
    for value in (-1, 0, 1) if floor < 0 else (0, 0.5, 1):
        y = y_of(value)
        parts.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end" '
            f'fill="#8a93a2">{value:g}</text>'
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + span_x}" y2="{y:.1f}" stroke="#eef0f3"/>'
        )
    step = span_x / max(1, len(runs) - 1)
    for index, (name, key, color) in enumerate(series):
        points = [
            (left + i * step, y_of(max(floor, min(1.0, metric))))
            for i, metric in enumerate(r.metrics.get(key) for r in runs)
            if metric is not None
        ]
        if points:
            parts.append(
                f'<polyline fill="none" stroke="{color}" stroke-width="2" points="'
                + " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
                + '"/>'
            )
            parts += [
                f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{color}"/>' for px, py in points
            ]
        parts.append(
            f'<text x="{left + 6 + index * 60}" y="{height - 4}" font-size="11" fill="{color}">'
            f"{name}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _claims(d: Disagreement) -> str:
    if not d.claims:
        return ""
    items = []
    for claim in d.claims:
        css, mark = (
            ("claim-unk", "?")
            if claim.supported is None
            else ("claim-ok", "✓")
            if claim.supported
            else ("claim-bad", "✗")
        )
        evidence = (
            f' <span class="meta">— “{escape(claim.evidence)}”</span>' if claim.evidence else ""
        )
        items.append(f'<li class="{css}">{mark} {escape(claim.claim)}{evidence}</li>')
    return f'<ul class="claims">{"".join(items)}</ul>'


def _criterion(c: CriterionReport, decision: Decision | None, runs: Sequence[HistoryRun]) -> str:
    question = c.question
    status = decision.status if decision else "NONE"
    judge = c.judge
    who = (
        escape(f"{judge.kind}" + (f", model {judge.model}" if judge and judge.model else ""))
        if judge
        else ""
    )
    out = [
        f'<section class="criterion" id="{escape(c.id)}"><h2>{escape(c.id)}'
        f'<span class="badge {status}">{"gate " + status if decision else "not gated"}</span></h2>',
        f'<p class="question">{escape(question)}</p>' if question else "",
        f'<p class="meta">{who} · {c.n} examples ({c.labelled_pass} labelled pass, '
        f"{c.labelled_fail} labelled fail) · {c.abstained} abstained</p>",
    ]
    if decision:
        out.append(f'<p class="reasons">{escape(decision.summary)}</p>')
    out += [f'<p class="reasons">⚠ {escape(w)}</p>' for w in c.warnings]
    if c.selective:  # selective judging: the certificate, then each judge of the cascade
        s = c.selective
        out.append(
            f'<p class="meta">Selective judging ({escape(s.confidence)} confidence, '
            f"target {s.min_agreement:g} at delta {s.delta:g}): {escape(s.problem or s.statement)}"
            + "".join(
                f"<br>{escape(t.model or 'recorded')}: threshold {escape(t.threshold)}, "
                f"{t.covered} of "
                f"{t.reaching} given, agreement {escape(t.agreement)}"
                for t in s.stages
            )
            + "</p>"
        )
    out.append(
        '<div class="charts">'
        f'<div class="chart"><h3>Confusion matrix</h3>{heatmap(c)}</div>'
        f'<div class="chart"><h3>Agreement, 95% intervals</h3>{intervals_chart(c)}</div>'
        + (
            f'<div class="chart"><h3>Past runs ({len(runs)})</h3>{history_chart(runs)}</div>'
            if len(runs) >= 2
            else ""
        )
        + "</div>"
    )
    if c.probes:  # robustness probes: what the rewrites bought, per probe and direction
        out.append(
            "<details open><summary>Robustness probes</summary><table><tr><th>probe</th>"
            "<th>toward</th><th>tried</th><th>bought</th><th>abstained</th><th>rate</th>"
            "<th>95% interval</th><th>bought on</th><th>keeps the label because</th></tr>"
            + "".join(
                f"<tr><td>{escape(r.probe)}</td><td>{r.toward}</td><td>{r.tried}</td>"
                f"<td>{r.flipped}</td><td>{r.abstained}</td><td>{escape(fmt_number(r.rate, 2))}"
                f"</td><td>{r.interval[0]:.2f}-{r.interval[1]:.2f}</td>"
                f'<td>{escape(", ".join(r.bought)) or "-"}</td><td class="text">{escape(r.why)}'
                "</td></tr>"
                for r in c.probes
            )
            + "</table></details>"
        )
    if c.contexts:  # source material shared by several examples: shown once, each linked to
        out += [
            f'<details id="{_context_anchor(c.id, name)}"><summary>Context file '
            f'{escape(name)}</summary><div class="text">{escape(text)}</div></details>'
            for name, text in sorted(c.contexts.items())
        ]
    if c.disagreements:
        rows = []
        for d in c.disagreements:
            shared = (
                f'<a href="#{_context_anchor(c.id, d.context_file)}">{escape(d.context_file)}</a>'
                if d.context_file
                else None
            )
            example = "".join(
                f'<div class="meta">{name}</div><div>{value}</div>'
                for name, value in (
                    ("input", escape(d.input) if d.input else None),
                    ("context", escape(d.context) if d.context else shared),
                    ("output", escape(d.output) if d.output else None),
                )
                if value
            )
            reason = escape(d.reason) + (
                f'<div class="meta">raw answer: {escape(d.raw)}</div>' if d.raw else ""
            )
            rows.append(
                f"<tr><td>{escape(d.id)}</td><td>{_verdict(d.label)}</td><td>{_verdict(d.verdict)}"
                f"{' (' + escape(d.abstention) + ')' if d.abstention else ''}</td>"
                f'<td class="text">{example}</td><td class="text">{reason}{_claims(d)}</td></tr>'
            )
        out.append(
            f"<details open><summary>Disagreements ({len(c.disagreements)})</summary>"
            "<table><tr><th>id</th>"
            "<th>label</th><th>judge</th><th>example</th><th>judge's reason</th></tr>"
            + "".join(rows)
            + "</table></details>"
        )
    else:
        out.append('<p class="meta">No disagreements.</p>')
    out.append("</section>")
    return "".join(out)


def _span(interval: Sequence[float | None]) -> str:
    low, high = interval
    return "n/a" if low is None or high is None else f"{low:.2f}-{high:.2f}"


def _pair(p: PairwiseReport, decision: Decision | None) -> str:
    """A pairwise criterion: its decision, figures, and each pair it got wrong or left undecided,
    the two replies side by side with what each order said."""
    f = p.figures
    status = decision.status if decision else "NONE"
    figures = [
        ("pairs", f["n"]),
        ("abstained", f["abstained"]),
        ("accuracy", fmt_number(f["accuracy"] if f["accuracy"] is not None else math.nan, 3)),
        (
            "consistency",
            fmt_number(f["consistency"] if f["consistency"] is not None else math.nan, 3),
        ),
        ("inconsistent: first / second won both", f"{f['first_won']} / {f['second_won']}"),
        ("position preference p", f"{f['position_p']:.2g}"),
    ]
    out = [
        f'<section class="criterion" id="{escape(p.id)}"><h2>{escape(p.id)} (pairwise)'
        f'<span class="badge {status}">{"gate " + status if decision else "not gated"}</span></h2>',
        f'<p class="question">{escape(p.question)}</p>',
        f'<p class="meta">model {escape(p.model or "n/a")} · {escape(p.source)} · each pair asked '
        "in both orders; an inconsistent pair is never a win</p>",
    ]
    if decision:
        out.append(f'<p class="reasons">{escape(decision.summary)}</p>')
    out.append(
        "<table>"
        + "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in figures)
        + "</table>"
    )
    if p.probes:
        out.append(
            "<details open><summary>Robustness probes</summary><table><tr><th>probe</th>"
            "<th>tried</th><th>moved off the label</th><th>abstained</th><th>95% interval</th>"
            "<th>bought on</th><th>keeps the label because</th></tr>"
            + "".join(
                f"<tr><td>{escape(r.probe)}</td><td>{r.tried}</td><td>{r.flipped}</td>"
                f"<td>{r.abstained}</td><td>{escape(_span(r.interval))}</td>"
                f'<td>{escape(", ".join(r.bought)) or "-"}</td><td class="text">{escape(r.why)}'
                "</td></tr>"
                for r in p.probes
            )
            + "</table></details>"
        )
    rows = [
        f"<tr><td>{escape(d.id)}</td><td>{escape(d.label)}</td><td>{escape(d.outcome)}<div "
        f'class="meta">a first: {escape(d.a_first or "no answer")}; b first: '
        f"{escape(d.b_first or 'no answer')}</div></td>"
        + (f'<td class="text">{escape(d.input)}</td>' if d.input else "<td></td>")
        + "".join(f'<td class="text">{escape(text)}</td>' for text in (d.output_a, d.output_b))
        + "</tr>"
        for d in p.disagreements
    ]
    out.append(
        f"<details open><summary>Pairs not decided as labelled ({len(rows)})</summary><table><tr>"
        "<th>id</th><th>label</th><th>judge</th><th>input</th><th>reply a</th><th>reply b</th>"
        "</tr>" + "".join(rows) + "</table></details>"
        if rows
        else '<p class="meta">Every pair decided as labelled.</p>'
    )
    out.append("</section>")
    return "".join(out)


def _context_anchor(criterion_id: str, name: str) -> str:
    """An id for a criterion's context file on the page (a digest: any name is a safe id)."""
    return "context-" + hashlib.sha256(f"{criterion_id}\0{name}".encode()).hexdigest()[:12]


def to_html(
    report: Report,
    decisions: dict[str, Decision] | None = None,
    history: dict[str, Sequence[HistoryRun]] | None = None,
    title: str = "judgekit calibration report",
) -> str:
    """The page: gate decisions and past runs are optional (a report alone still renders)."""
    decisions, history = decisions or {}, history or {}
    body = "".join(
        _criterion(c, decisions.get(c.id), history.get(c.id, ())) for c in report.criteria
    ) + "".join(_pair(p, decisions.get(p.id)) for p in report.pairwise)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; "
        'img-src data:">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body><header>"
        f"<h1>{escape(title)}</h1>"
        f"<p>judgekit {escape(report.judgekit_version)} · {report.created_at:%Y-%m-%d %H:%M} UTC "
        "(gate decisions as of then) · "
        f"{len(report.criteria) + len(report.pairwise)} criteria</p></header>"
        f"<main>{body or '<p>No criteria.</p>'}</main></body></html>"
    )


def write_html(
    report: Report,
    directory: Path,
    decisions: dict[str, Decision] | None = None,
    history: dict[str, Sequence[HistoryRun]] | None = None,
) -> Path:
    """Write report.html beside report.json, with the gate's decisions and past runs the caller
    gives (the page shows the figures alone without them). Returns the path written."""
    path = Path(directory) / "report.html"
    write_atomic(path, to_html(report, decisions, history))
    return path
