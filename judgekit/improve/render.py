"""What `judgekit improve` writes: the proposal as a criterion file (a `Change`, as `compare
--adopt` writes one), its diff against the file now, and the figures (improve.md for people,
improve.json for scripts): every candidate on dev, the test of the best against the current judge,
the test examples whose verdict it changes, and the labels to re-check.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from judgekit.compare.adopt import Change, leading_comments
from judgekit.improve.search import Improvement, finals, right, trials_of
from judgekit.inputs.criteria import LLMCriterion
from judgekit.inputs.files import read_text, read_yaml
from judgekit.report.render import fmt_number, md_escape


def proposed(path: Path, candidate: LLMCriterion, current: LLMCriterion) -> Change:
    """The criterion file with what the proposal changes (wording, few-shot examples, trials,
    temperature); its leading comment lines kept."""
    data = dict(read_yaml(path) or {})
    for key in ("question", "pass_when", "fail_when"):
        if getattr(candidate, key) != getattr(current, key):
            data[key] = getattr(candidate, key)
    if candidate.examples != current.examples:
        data["examples"] = [e.model_dump(exclude_none=True) for e in candidate.examples]
    judge = dict(data.get("judge") or {})
    for key in ("trials", "temperature"):
        if getattr(candidate.judge, key) != getattr(current.judge, key):
            judge[key] = getattr(candidate.judge, key)
    if judge:
        data["judge"] = judge
    before = read_text(path)
    after = "".join(leading_comments(before)) + yaml.safe_dump(
        data, sort_keys=False, allow_unicode=True, width=100
    )
    return Change(path, before, after, "proposed")


def summary(found: Improvement) -> dict[str, Any]:
    """improve.json: every figure the page shows."""
    dev = found.scoring or found.dev.set.examples
    rows = [
        {
            "name": m.spec.name,
            "right": right(m, dev),
            "n": len(dev),
            "tpr": m.report.metrics.get("tpr"),
            "tnr": m.report.metrics.get("tnr"),
            "kappa": m.report.metrics.get("cohen_kappa"),
            "trials": trials_of(m),
            "why": next(
                (p.why for p in found.tried if p.name == m.spec.name), "the judge as it is"
            ),
        }
        for m in found.dev.measured
    ]
    out: dict[str, Any] = {
        "criterion": found.criterion.id,
        "dev": rows,
        "dropped": found.dropped,
        "best": found.best.spec.name if found.best else None,
        "budget": found.budget.words() if found.budget else None,
        "labels_to_recheck": found.to_recheck,
        "accepted": found.accepted,
    }
    if found.acceptance is not None and found.test is not None:
        a = found.acceptance
        out["test"] = {
            "n": a.n,
            "current_right": a.current_right,
            "candidate_right": a.candidate_right,
            "only_candidate_right": a.candidate_better,
            "only_current_right": a.current_better,
            "p_value": a.p_value,
            "alpha": a.alpha,
            "lower_bounds": a.lower_bounds,
            "reasons": list(a.reasons),
            "changed": changed(found),
            "shown_out": found.shown_out,
        }
    return out


def changed(found: Improvement) -> list[dict[str, Any]]:
    """The test examples of the look whose verdict the best candidate changes."""
    if found.test is None or found.budget is None:
        return []
    was, now = (finals(m.report) for m in found.test.measured)
    out = []
    for e in found.used:
        before, after = (f[e.id].passed if e.id in f else None for f in (was, now))
        if before != after:
            out.append(
                {
                    "id": e.id,
                    "label": e.label,
                    "current": before,
                    "candidate": after,
                    "output": e.output,
                }
            )
    return out


def _word(value: bool | None) -> str:
    return "abstained" if value is None else "pass" if value else "fail"


def markdown(found: Improvement) -> str:
    data = summary(found)
    lines = [
        f"# judgekit improve: {found.criterion.id}",
        "",
        "## Candidates on the dev split",
        "",
        f"Ranked on the {data['dev'][0]['n']} dev examples "
        "none of them is shown as a few-shot example.",
        "",
        "| candidate | right | TPR | TNR | kappa | what it changes |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['name']} | {r['right']} of {r['n']} | "
        f"{fmt_number(r['tpr'])} | {fmt_number(r['tnr'])} | "
        f"{fmt_number(r['kappa'])} | {md_escape(r['why'])} |"
        for r in data["dev"]
    ]
    lines += [f"- {md_escape(d)}" for d in found.dropped]
    lines += ["", "## The test split", ""]
    if found.best is None:
        lines.append(
            "No candidate was right on more dev examples than the current judge: "
            "the test split was not looked at (its budget is untouched)."
        )
    elif found.acceptance is None:
        lines.append(
            f"Best on dev: {found.best.spec.name}. "
            f"Not tested: {found.budget.words() if found.budget else ''}."
        )
    else:
        t = data["test"]
        verdict = "ACCEPTED" if found.accepted else "not accepted"
        lines += [
            f"Best on dev: {found.best.spec.name}, {verdict}. "
            f"{found.budget.words() if found.budget else ''}.",
            "",
            f"Right on {t['candidate_right']} of {t['n']} held-out examples "
            f"against {t['current_right']} "
            f"({t['only_candidate_right']} only the candidate, "
            f"{t['only_current_right']} only the current "
            f"judge); one-sided exact McNemar p = {t['p_value']:.3g}, alpha {t['alpha']:.4g}.",
        ]
        lines += [f"- {md_escape(r)}" for r in t["reasons"]]
        if t["shown_out"]:
            lines.append(
                f"- Left out of the held-out examples: {len(t['shown_out'])} test examples the "
                f"candidate is shown as few-shot examples ({md_escape(', '.join(t['shown_out']))})."
            )
        if t["changed"]:
            lines += ["", "| id | label | current | candidate | output |", "|---|---|---|---|---|"]
            lines += [
                f"| {md_escape(c['id'])} | {_word(c['label'])} | {_word(c['current'])} | "
                f"{_word(c['candidate'])} | {md_escape(c['output'], 160)} |"
                for c in t["changed"]
            ]
    if found.to_recheck:
        lines += [
            "",
            "## Labels to re-check",
            "",
            "Every judge measured, in every trial, gave the verdict the "
            "label denies; improve never changes a label. `judgekit label --review "
            f"{found.criterion.id}` shows them beside the judge's reasons: "
            + ", ".join(md_escape(i) for i in found.to_recheck),
        ]
    return "\n".join(lines) + "\n"


def as_json(found: Improvement) -> str:
    return json.dumps(summary(found), indent=2, default=str) + "\n"
