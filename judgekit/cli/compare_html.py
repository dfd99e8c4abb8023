"""compare.html: one self-contained page (inline CSS, no script, no network) per compare.json.

At the top the recommendation in one sentence (or, when no candidate passes, the closest one and
what blocks it); then every candidate with its gate decision, calibration, cost and how it stands
against the best and the baseline; the cost-vs-kappa front; and the per-example grid, each cell
the candidate's verdict against the label (✓ right, ✗ wrong, – abstained). The grid is bounded
(by default 200 examples by 60 candidates) and says what it left out; compare.json holds all.
Every text from users' files is escaped, as on report.html (judgekit.cli.html).

>>> from judgekit.compare.model import Recommendation
>>> c = Comparison(criterion="<b>", set="s", labelled_pass=0, labelled_fail=0, baseline=None,
...                best="x", candidates=[], examples=[],
...                recommendation=Recommendation(candidate=None, why="", front=[]))
>>> "&lt;b&gt;" in page(c) and "<b>" not in page(c)
True
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

from judgekit.cli.html import STYLE, escape
from judgekit.compare.model import Candidate, Comparison, Paired
from judgekit.inputs.files import write_atomic
from judgekit.report.render import fmt_number

MAX_ROWS = 200
MAX_COLUMNS = 60

# Right, wrong and abstained differ by mark as well as by colour (colour-blind readers, print).
MARKS = {"right": "✓", "wrong": "✗", "abstained": "–", "missing": "?"}

# A backslash at a line's end joins it to the next line (the style's text is unchanged).
COMPARE_STYLE = """
:root{color-scheme:light dark}main{max-width:1600px}td.paired{min-width:190px}
.recommend{font-size:17px;margin:18px 0 4px;padding:12px 16px;border-radius:8px;\
border:1px solid #dde1e7;
background:#fff}.recommend.none{border-color:#e7b3b3}
.small{font-size:12px;color:#4b5565}.num{white-space:nowrap;font-variant-numeric:tabular-nums}
td ul{margin:2px 0 0;padding-left:16px}.name{word-break:break-word;max-width:240px;font-weight:600}
.better{color:#10652f;font-weight:600}.worse{color:#8c1d1d;font-weight:600}
.gridwrap{overflow:auto;max-height:80vh;border:1px solid #e4e7ec}
table.grid{width:auto;font-size:12.5px}\
table.grid td,table.grid th{padding:2px 6px;text-align:center}
table.grid thead th{position:sticky;top:0;z-index:1}
table.grid thead th:first-child{text-align:left}
table.grid tbody th{text-align:left;font-weight:400;max-width:260px;word-break:break-word}
table.grid th.cand{writing-mode:vertical-rl;transform:rotate(180deg);max-height:160px;\
overflow:hidden;
text-overflow:ellipsis;white-space:nowrap;vertical-align:bottom}
td.right{color:#10652f;background:#e3f5e9}td.wrong{color:#8c1d1d;background:#fbdcdc;font-weight:700}
td.abstained{color:#4b5565;background:#eceef2}td.missing{color:#7a5500}
.legend span{margin-right:14px}
@media (prefers-color-scheme:dark){
body{background:#14171d;color:#e4e7ec}section.criterion,.recommend{background:#1d2330;border-color:#343b48}
th{background:#262c38}th,td{border-color:#343b48}.meta,.question,.reasons,.small{color:#aab2bf}
.better{color:#7fd49b}.worse{color:#ff9b9b}.gridwrap{border-color:#343b48}
td.right{color:#7fd49b;background:#17301f}td.wrong{color:#ffb0b0;background:#4a1f1f}
td.abstained{color:#c5cad3;background:#2a303b}td.missing{color:#f0c674}}
@media print{body{background:#fff;color:#000}header{background:#fff;color:#000;padding:0}\
header p{color:#333}
main{padding:0;max-width:none}section.criterion,.recommend{border:0;padding:0;margin:14px 0}
.gridwrap{overflow:visible;max-height:none;border:0}table.grid thead th{position:static}
*{-webkit-print-color-adjust:exact;print-color-adjust:exact}tr{break-inside:avoid}}
"""


def _money(x: float | None) -> str:
    if x is None or math.isnan(x):
        return "unknown"
    # Fractions of a cent keep two significant digits.
    return f"${x:,.2f}" if x >= 0.01 else f"${x:.2g}"


def _seconds(x: float | None) -> str:
    return "unknown" if x is None or math.isnan(x) else f"{x:.2f} s"


def _p(p: float) -> str:
    return "n/a" if math.isnan(p) else ("<0.001" if p < 0.001 else f"{p:.3f}")


def _signed(x: float | None) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{x:+.2f}"


def _when(moment: datetime) -> str:
    # A naive time (written by hand) is taken as UTC, as judgekit writes it.
    utc = moment.astimezone(UTC) if moment.tzinfo else moment
    return f"{utc:%Y-%m-%d %H:%M} UTC"


def _with_interval(c: Candidate, key: str) -> str:
    low, high = c.intervals.get(key, (None, None))
    return (
        f'{fmt_number(c.metrics.get(key), 2)}<div class="small">[{fmt_number(low, 2)}, '
        f"{fmt_number(high, 2)}]</div>"
    )


def _mark(verdict: str, label: bool) -> str:
    """The cell's class: the candidate's verdict character (`grid`) against the human's label."""
    if verdict == "-":
        return "abstained"
    if verdict not in ("p", "f"):
        return "missing"  # a grid shorter than the examples, or a character it should not hold
    return "right" if (verdict == "p") == label else "wrong"


def _paired(paired: Paired | None, role: str, name: str, other: str | None) -> str:
    if paired is None:
        return (
            f'<span class="small">{"— (this is the " + role + ")" if name == other else "—"}</span>'
        )
    d, low, high = paired.deltas.get("cohen_kappa", (None, None, None))
    separate = ""
    if paired.verdict == "indistinguishable":
        separate = (
            f"{paired.examples_to_separate:,} more examples would separate them"
            if paired.examples_to_separate is not None
            else "no set under 100,000 examples would separate them"
        )
        separate = f'<div class="small">{separate}</div>'
    return (
        f'<span class="{escape(paired.verdict)}">{escape(paired.verdict)}</span>'
        f'<div class="small">p adj. {_p(paired.p_adjusted)} · '
        f"right only here {paired.only_this_right}, "
        f"only there {paired.only_other_right}</div>"
        f'<div class="small">Δkappa {_signed(d)} [{_signed(low)}, {_signed(high)}]</div>{separate}'
    )


def _setting(c: Candidate) -> str:
    s = c.setting
    parts = [
        ("model", s.model),
        ("variant", s.variant),
        ("trials", s.trials),
        ("verdicts", s.verdicts),
    ]
    text = " · ".join(f"{k} {v}" for k, v in parts if v is not None)
    return f'<div class="small">{escape(text)}{" · " if text else ""}{escape(c.source)}</div>'


def _candidate_row(c: Candidate, comparison: Comparison) -> str:
    reasons = "".join(f"<li>{escape(r)}</li>" for r in c.gate_reasons)
    cost = c.cost
    return (
        f'<tr><td><div class="name">{escape(c.name)}</div>{_setting(c)}</td>'
        f'<td><span class="badge {escape(c.gate)}">{escape(c.gate)}</span>'
        f"{f'<ul class=small>{reasons}</ul>' if reasons else ''}</td>"
        f'<td class="num">{c.n}</td><td class="num">{_with_interval(c, "tpr")}</td>'
        f'<td class="num">{_with_interval(c, "tnr")}</td>'
        f'<td class="num">{_with_interval(c, "cohen_kappa")}</td>'
        f'<td class="num">{c.abstained}</td><td class="num">{fmt_number(c.flip_rate, 3)}</td>'
        f'<td class="num">{_money(cost.per_1000_verdicts)}</td>'
        f'<td class="num">{_seconds(cost.latency_p50_s)}'
        f'<div class="small">p95 {_seconds(cost.latency_p95_s)}'
        f'</div></td><td class="paired">{_paired(c.vs_best, "best", c.name, comparison.best)}</td>'
        f'<td class="paired">{_paired(c.vs_baseline, "baseline", c.name, comparison.baseline)}'
        "</td></tr>"
    )


def _candidates(comparison: Comparison) -> str:
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "candidate",
            "gate",
            "n",
            "TPR [95%]",
            "TNR [95%]",
            "kappa [95%]",
            "abstained",
            "flip rate",
            "cost per 1,000 verdicts",
            "latency p50 / p95",
            "vs best",
            "vs baseline",
        )
    )
    rows = "".join(_candidate_row(c, comparison) for c in comparison.candidates)
    return (
        '<section class="criterion" id="candidates">'
        f"<h2>Candidates ({len(comparison.candidates):,})</h2>"
        f'<div class="gridwrap"><table class="candidates"><thead><tr>{head}</tr></thead>'
        f"<tbody>{rows}</tbody></table></div></section>"
    )


def _recommendation(comparison: Comparison) -> str:
    r = comparison.recommendation
    why = f" — {escape(r.why)}" if r.why else ""
    if r.candidate is not None:
        return f'<p class="recommend" id="recommendation">Use <b>{escape(r.candidate)}</b>{why}</p>'
    if r.closest is not None:  # `why` says this sentence too: said once, with what blocks it
        blocked = "; ".join(r.blocked_by) or "nothing recorded"
        return (
            '<p class="recommend none" id="recommendation">No candidate passes the gate; '
            f"the closest is <b>{escape(r.closest)}</b>, blocked by: {escape(blocked)}</p>"
        )
    return f'<p class="recommend none" id="recommendation">No candidate passes the gate{why}</p>'


def _front(comparison: Comparison) -> str:
    by_name = {c.name: c for c in comparison.candidates}
    items = []
    for name in comparison.recommendation.front:
        c = by_name.get(name)
        figures = (
            ""
            if c is None
            else (
                f" — {_money(c.cost.per_1000_verdicts)} per 1,000 verdicts, kappa lower bound "
                f"{fmt_number(c.intervals.get('cohen_kappa', (None, None))[0], 2)}"
            )
        )
        items.append(f"<li><b>{escape(name)}</b>{figures}</li>")
    body = (
        f"<ol>{''.join(items)}</ol>"
        if items
        else '<p class="meta">No candidate has a known cost, so there is no front.</p>'
    )
    return (
        '<section class="criterion" id="front"><h2>Cost against kappa\'s lower bound</h2>'
        '<p class="meta">'
        "The candidates no other beats on both, cheapest first.</p>" + body + "</section>"
    )


def _columns(comparison: Comparison, limit: int) -> list[Candidate]:
    """At most `limit` candidates, in the table's order: the recommended, best, baseline and closest
    ones and those on the front first, then the others as listed."""
    r = comparison.recommendation
    wanted = [r.candidate, comparison.best, comparison.baseline, r.closest, *r.front]
    names = {c.name for c in comparison.candidates}
    chosen = list(dict.fromkeys(n for n in wanted if n in names))[:limit]
    for c in comparison.candidates:
        if len(chosen) >= limit:
            break
        if c.name not in chosen:
            chosen.append(c.name)
    keep = set(chosen)
    return [c for c in comparison.candidates if c.name in keep]


def _grid(comparison: Comparison, max_rows: int, max_columns: int) -> str:
    examples, candidates = comparison.examples, comparison.candidates
    shown_examples, shown = examples[:max_rows], _columns(comparison, max_columns)
    separating = sum(e.separates for e in examples)
    notes = [
        f"{separating:,} of {len(examples):,} examples separate the candidates "
        "(not every candidate gave them the same verdict); they are listed first."
    ]
    if len(shown_examples) < len(examples) or len(shown) < len(candidates):
        notes.append(
            f"Showing {len(shown_examples):,} of {len(examples):,} examples and {len(shown):,} of "
            f"{len(candidates):,} candidates (the recommended, best, baseline and closest "
            "candidates and those on the front first, then the others in the table's order); "
            f"left out: {len(examples) - len(shown_examples):,} examples and "
            f"{len(candidates) - len(shown):,} candidates. compare.json holds them all."
        )
    head = "".join(
        f'<th class="cand" title="{escape(c.name)}">{escape(c.name)}</th>' for c in shown
    )
    rows = []
    for i, example in enumerate(shown_examples):
        cells = []
        for c in shown:
            mark = _mark(c.grid[i] if i < len(c.grid) else "?", example.label)
            cells.append(f'<td class="{mark}">{MARKS[mark]}</td>')
        rows.append(
            f"<tr{' class=separates' if example.separates else ''}>"
            f'<th scope="row">{escape(example.id)}</th>'
            f"<td>{'pass' if example.label else 'fail'}</td>{''.join(cells)}</tr>"
        )
    legend = "".join(
        f'<span><span class="{k}">{MARKS[k]}</span> {k}</span>'
        for k in ("right", "wrong", "abstained")
    )
    return (
        '<section class="criterion" id="grid"><h2>Per example</h2>'
        + "".join(f'<p class="meta note">{n}</p>' for n in notes)
        + f'<p class="meta legend">{legend} — each cell is the verdict against the label.</p>'
        '<div class="gridwrap"><table class="grid"><thead><tr><th>example</th><th>label</th>'
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div></section>"
    )


def page(comparison: Comparison, max_rows: int = MAX_ROWS, max_columns: int = MAX_COLUMNS) -> str:
    """The page for one compare.json; the grid shows at most `max_rows` examples by `max_columns`
    candidates and says what it left out."""
    title = f"judgekit compare: {comparison.criterion}"
    judging = "" if comparison.judging_s is None else f" · judged in {comparison.judging_s:,.1f} s"
    baseline = f" · baseline {escape(comparison.baseline)}" if comparison.baseline else ""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; "
        'img-src data:"><meta name="color-scheme" content="light dark">'
        f"<title>{escape(title)}</title><style>{STYLE}{COMPARE_STYLE}</style></head><body><header>"
        f"<h1>{escape(title)}</h1><p>set {escape(comparison.set)} · "
        f"{len(comparison.candidates):,} candidates · "
        f"{len(comparison.examples):,} examples ({comparison.labelled_pass:,} labelled pass, "
        f"{comparison.labelled_fail:,} labelled fail) · best {escape(comparison.best)}{baseline} · "
        f"{_when(comparison.created_at)}{judging} · "
        f"judgekit {escape(comparison.judgekit_version)}</p>"
        f"</header><main>{_recommendation(comparison)}{_candidates(comparison)}{_front(comparison)}"
        f"{_grid(comparison, max_rows, max_columns)}</main></body></html>"
    )


def write(comparison: Comparison, directory: Path) -> Path:
    """Write compare.html beside compare.json in `directory`, whole or not at all; its path."""
    path = Path(directory) / "compare.html"
    write_atomic(path, page(comparison))
    return path
