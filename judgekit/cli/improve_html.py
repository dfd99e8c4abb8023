"""improve.html: what `judgekit improve` found, in report.html's style: every candidate on dev,
the test of the best against the current judge, the test examples whose verdict it changes, and
the labels to re-check.
"""

from __future__ import annotations

from typing import Any

from judgekit.cli.html import STYLE, escape
from judgekit.report.render import fmt_number


def _word(value: bool | None) -> str:
    return "abstained" if value is None else "pass" if value else "fail"


def page(summary: dict[str, Any]) -> str:
    """The page of improve.json's summary."""
    rows = "".join(
        f"<tr><td>{escape(r['name'])}</td><td>{r['right']} of {r['n']}</td>"
        f"<td>{fmt_number(r['tpr'])}</td><td>{fmt_number(r['tnr'])}</td>"
        f"<td>{fmt_number(r['kappa'])}</td><td>{escape(r['why'])}</td></tr>"
        for r in summary["dev"]
    )
    out = [
        "<!doctype html><meta charset='utf-8'>"
        f"<title>judgekit improve: {escape(summary['criterion'])}</title>",
        f"<style>{STYLE}</style><main><h1>judgekit improve: {escape(summary['criterion'])}</h1>",
        "<section class='criterion'><h2>Candidates on the dev split</h2>"
        "<table><tr><th>candidate</th><th>right</th>"
        f"<th>TPR</th><th>TNR</th><th>kappa</th><th>what it changes</th></tr>{rows}</table>",
    ]
    out += [f"<p class='meta'>{escape(d)}</p>" for d in summary["dropped"]]
    out.append("</section><section class='criterion'><h2>The test split</h2>")
    test = summary.get("test")
    if summary["best"] is None:
        out.append(
            "<p>No candidate beat the current judge on dev: the test split was not looked at.</p>"
        )
    elif test is None:
        out.append(
            f"<p>Best on dev: {escape(summary['best'])}; "
            f"not tested: {escape(summary['budget'])}.</p>"
        )
    else:
        status = "PASS" if summary["accepted"] else "FAIL"
        out.append(
            f"<h3>{escape(summary['best'])}<span class='badge {status}'>"
            f"{'accepted' if summary['accepted'] else 'not accepted'}</span></h3>"
            f"<p class='meta'>{escape(summary['budget'])}</p>"
            f"<p>Right on {test['candidate_right']} of {test['n']} held-out examples against "
            f"{test['current_right']}: {test['only_candidate_right']} only the candidate, "
            f"{test['only_current_right']} only the current judge; one-sided exact "
            f"McNemar p = {test['p_value']:.3g}, alpha {test['alpha']:.4g}.</p>"
        )
        out += [f"<p class='reasons'>{escape(r)}</p>" for r in test["reasons"]]
        if test["changed"]:
            out.append(
                "<table><tr><th>id</th><th>label</th><th>current</th><th>candidate</th>"
                "<th>output</th></tr>"
                + "".join(
                    f"<tr><td>{escape(c['id'])}</td><td>{_word(c['label'])}</td>"
                    f"<td>{_word(c['current'])}</td><td>{_word(c['candidate'])}</td>"
                    f"<td class='text'>{escape(c['output'])}</td></tr>"
                    for c in test["changed"]
                )
                + "</table>"
            )
    out.append("</section>")
    if summary["labels_to_recheck"]:
        out.append(
            "<section class='criterion'><h2>Labels to re-check</h2>"
            "<p>Every judge measured, in every trial, gave the verdict the label denies "
            "(improve never changes a label; `judgekit label --review` shows them): "
            f"{escape(', '.join(summary['labels_to_recheck']))}</p></section>"
        )
    return "".join(out) + "</main>\n"
