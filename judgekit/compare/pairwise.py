"""Candidate judges of one pairwise criterion on its labelled pairs (`judgekit compare -c ID` of a
`kind: pairwise` criterion): each candidate's figures (accuracy, consistency across orders, the
share of pairs each position won in both orders) and the gate's decision on them, every candidate
judged on the same pairs, and each paired with the best by the exact McNemar test on the pairs it
got right (a pair without a verdict, or inconsistent, is not right), Bonferroni-adjusted over
every pair of candidates because the best is chosen from the same data (judgekit.stats.paired.
against_best).

Candidates are recorded (a verdict file's `candidate` column: `judgekit import llmbar` writes one
per judge set-up) or live (`--model`, each asked in both orders through the cache).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from judgekit.errors import InputError, Problem
from judgekit.gate.pairwise import pair_label_sources, thresholds
from judgekit.inputs.files import write_atomic
from judgekit.inputs.pairwise import PairSet, PairwiseCriterion
from judgekit.inputs.policy import Thresholds
from judgekit.judging.pairwise import PairVerdict, as_recorded_for, read_recorded_pairs
from judgekit.pipeline import Options, measure_pairwise
from judgekit.report.pairwise import numbers, recount
from judgekit.report.text import md_escape
from judgekit.stats.paired import against_best
from judgekit.stats.pairwise import PairwiseFigures


@dataclass(frozen=True)
class PairCandidate:
    """One candidate's figures on the pairs, the gate's word on them, and which pairs it got
    right (in the set's order)."""

    name: str
    figures: PairwiseFigures
    orders: int
    status: str
    reasons: tuple[str, ...]
    right: tuple[bool, ...]
    p_vs_best: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "candidate": self.name,
            "orders": self.orders,
            "gate": self.status,
            "reasons": list(self.reasons),
            "figures": numbers(self.figures),
            "right": sum(self.right),
            "p_vs_best": self.p_vs_best,
        }


def _candidate(  # noqa: PLR0913  a candidate, and what its figures are weighed against
    name: str,
    labels: Mapping[str, str],
    verdicts: Sequence[PairVerdict],
    criterion: PairwiseCriterion,
    t: Thresholds,
    refused: str | None = None,
) -> PairCandidate:
    """One candidate as the gate weighs its figures; `refused`: why its labels are not ground
    truth for it (the gate's label_sources), which FAILs it whatever its figures."""
    orders = 1 if all(v.b_first is None for v in verdicts) else 2
    f = recount(labels, verdicts, criterion.inconsistent, orders)
    sided = {i: label for i, label in labels.items() if label != "tie"}
    status, reasons = thresholds(f, t, recount(sided, verdicts, criterion.inconsistent, orders))
    if orders == 1:
        status, reasons = "FAIL", ["asked in one order only: consistency and position unmeasured"]
    if refused:
        status, reasons = "FAIL", [refused]
    by_id = {v.example_id: v for v in verdicts}
    right = tuple(
        by_id[i].winner(criterion.inconsistent, orders) == label for i, label in labels.items()
    )
    return PairCandidate(name, f, orders, status, tuple(reasons), right)


def ranked(candidates: Sequence[PairCandidate]) -> list[PairCandidate]:
    """The candidates, best first (most pairs right; then the most consistent), each with its
    adjusted p-value against the best (None for the best itself)."""

    def key(c: PairCandidate) -> tuple[int, float]:
        consistency = c.figures.consistency
        return (-sum(c.right), -(0.0 if math.isnan(consistency) else consistency))

    order = sorted(candidates, key=key)
    if len(order) < 2:
        return order
    best = order[0]
    b = [sum(x and not y for x, y in zip(best.right, c.right, strict=True)) for c in order[1:]]
    c_ = [sum(y and not x for x, y in zip(best.right, c.right, strict=True)) for c in order[1:]]
    adjusted = against_best(b, c_, len(order))
    return [order[0]] + [
        replace(c, p_vs_best=float(p)) for c, p in zip(order[1:], adjusted, strict=True)
    ]


def recorded_candidates(
    criterion: PairwiseCriterion, pairs: PairSet, path: Path, t: Thresholds
) -> list[PairCandidate]:
    """Each candidate of a verdict file, on exactly the set's pairs (a record of a copy counts
    for the pair kept; a candidate missing a pair, or recording one the set lacks, is refused)."""
    _, by_candidate = read_recorded_pairs(path, criterion.id)
    labels = {e.id: e.gold for e in pairs.examples}
    copy_of = {c: kept for kept, copies in pairs.copies.items() for c in copies}
    problems, out = [], []
    for name, found in sorted(by_candidate.items(), key=lambda x: str(x[0])):
        shown = name or path.stem
        extra = sorted(i for i in found if i not in labels and i not in copy_of)
        mine, missing = {}, []
        for e in pairs.examples:
            v, _ = as_recorded_for(e, pairs, found)  # copies that disagree: an abstention
            if v is None:
                missing.append(e.id)
            else:
                mine[e.id] = v
        said = (
            [f"no verdict for {len(missing)} pair(s) ({', '.join(missing[:3])})"] if missing else []
        )
        said += (
            [f"verdicts for {len(extra)} pair(s) not in the set ({', '.join(extra[:3])})"]
            if extra
            else []
        )
        if said:
            problems.append(Problem(str(path), f"candidate {shown}", "; ".join(said)))
            continue
        verdicts = list(mine.values())
        refused = pair_label_sources(pairs, t, None)  # another tool's judge: its model is not known
        out.append(_candidate(shown, labels, verdicts, criterion, t, refused))
    if problems:
        raise InputError(problems)
    return out


async def live_candidates(
    criterion: PairwiseCriterion,
    pairs: PairSet,
    models: Sequence[str],
    options: Options,
    t: Thresholds,
) -> list[PairCandidate]:
    """Each model asked live on the set's pairs, both orders, through the cache."""
    labels = {e.id: e.gold for e in pairs.examples}
    out = []
    for model in models:
        report = (await measure_pairwise([criterion], replace(options, model=model)))[0]
        refused = pair_label_sources(pairs, t, model)
        out.append(_candidate(model, labels, report.pair_verdicts(), criterion, t, refused))
    return out


def table(candidates: Sequence[PairCandidate]) -> str:
    """The comparison as a Markdown table, best first."""
    rows = [
        "| candidate | gate | accuracy | consistency | 1st / 2nd won both | first share (p) | "
        "right | p vs best |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in candidates:
        f = c.figures
        acc = "n/a" if math.isnan(f.accuracy) else f"{f.accuracy:.3f}"
        con = "n/a" if math.isnan(f.consistency) else f"{f.consistency:.3f}"
        share = "n/a" if math.isnan(f.first_share) else f"{f.first_share:.2f}"
        p = "best" if c.p_vs_best is None else f"{c.p_vs_best:.3g}"
        rows.append(
            f"| {md_escape(c.name)} | {c.status} | {acc} | {con} | "
            f"{f.first_won} / {f.second_won} | "
            f"{share} (p={f.position_p:.2g}) | {sum(c.right)}/{f.n} | {p} |"
        )
    return "\n".join(rows) + "\n"


def write(out: Path, criterion: str, candidates: Sequence[PairCandidate]) -> Path:
    """compare.json (every candidate's figures) and compare.md (the table) in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    data = {
        "criterion": criterion,
        "kind": "pairwise",
        "candidates": [c.to_json() for c in candidates],
    }
    write_atomic(out / "compare.json", json.dumps(data, indent=2) + "\n")
    write_atomic(
        out / "compare.md", f"# {criterion}: pairwise judges compared\n\n" + table(candidates)
    )
    return out / "compare.json"
