"""From the judged candidates to compare.json: each paired with the best and the baseline, and the
recommendation.

Paired, not side by side: the candidates were judged on the same examples, so two are compared
on the examples one got right and the other did not (exact McNemar), with paired intervals of
the differences in TPR, TNR and kappa, simultaneous over the three and the family
(judgekit.stats.paired). Against a named baseline the family is the candidates compared with it
(Holm). Against the best, which is chosen by these very data, a plain Holm over the others would
favour it; the family is every pair
(Bonferroni), which holds whatever was chosen. `benchmarks/paired.py` measures both.

The recommendation is the cheapest candidate the gate passes; a candidate the gate blocks is
never recommended.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from judgekit.compare.model import (
    Candidate,
    ComparedExample,
    Comparison,
    Paired,
    Recommendation,
    Setting,
)
from judgekit.compare.run import Measured, Measurements
from judgekit.errors import InputError
from judgekit.stats.paired import (
    against_best,
    discordant,
    examples_to_separate,
    holm,
    mcnemar_many,
    paired_deltas,
)

ALPHA = 0.05
_CHAR = {True: "p", False: "f", None: "-"}


def analyse(judged: Measurements, baseline: str | None = None, seed: int = 0) -> Comparison:
    """compare.json's content from the judged candidates; `seed` seeds the intervals' draws."""
    measured = judged.measured
    names = [m.spec.name for m in measured]
    if baseline is not None and baseline not in names:
        raise InputError.one(
            "--baseline", baseline, f"no such candidate; the candidates are {', '.join(names)}"
        )
    order = [e.id for e in judged.set.examples]
    labels = [e.label for e in judged.set.examples]
    verdicts = {m.spec.name: [m.report.outcomes[i][1] for i in order] for m in measured}
    best = max(measured, key=lambda m: _strength(m, verdicts[m.spec.name], labels)).spec.name
    k = len(measured)
    vs_best = _family(labels, verdicts, best, [n for n in names if n != best], against=k, seed=seed)
    others = [n for n in names if n != baseline] if baseline else []
    vs_base = (
        _family(labels, verdicts, baseline, others, against=None, seed=seed) if baseline else {}
    )
    candidates = [
        _candidate(m, verdicts[m.spec.name], vs_best.get(m.spec.name), vs_base.get(m.spec.name))
        for m in measured
    ]
    examples = _examples(order, labels, verdicts)
    where = {eid: i for i, eid in enumerate(order)}
    index = [where[e.id] for e in examples]
    for c in candidates:
        c.grid = "".join(c.grid[i] for i in index)
    n_pass = sum(labels)
    return Comparison(
        criterion=judged.criterion.id,
        set=str(judged.set.path),
        labelled_pass=n_pass,
        labelled_fail=len(labels) - n_pass,
        baseline=baseline,
        best=best,
        candidates=candidates,
        examples=examples,
        recommendation=recommend(candidates),
        judging_s=judged.judging_s,
    )


def _strength(
    m: Measured, verdicts: list[bool | None], labels: list[bool]
) -> tuple[int, float, tuple[int, ...]]:
    """Examples right (an abstention is not right: as the paired test counts), then kappa, then
    name."""
    kappa = m.report.metrics.get("cohen_kappa")
    right = sum(1 for v, label in zip(verdicts, labels, strict=True) if v == label)
    return (right, kappa if kappa is not None else -math.inf, _neg(m.spec.name))


def _neg(name: str) -> tuple[int, ...]:
    # the earlier name wins a tie under max() ("a" before "ab")
    return (
        *(-ord(ch) for ch in name),
        1,
    )


def _family(
    labels: list[bool],
    verdicts: dict[str, list[bool | None]],
    other: str,
    names: list[str],
    against: int | None,
    seed: int,
) -> dict[str, Paired]:
    """Each of `names` paired with `other`: against the best (`against` = the number of candidates)
    Bonferroni over every pair, else Holm over these."""
    if not names:
        return {}
    counts = [discordant(labels, verdicts[n], verdicts[other]) for n in names]
    raw = [float(p) for p in mcnemar_many([b for b, _ in counts], [c for _, c in counts])]
    if against is not None:
        adjusted = [
            float(p) for p in against_best([b for b, _ in counts], [c for _, c in counts], against)
        ]
        family = against * (against - 1) // 2
    else:
        adjusted, family = holm(raw), len(names)
    out = {}
    for name, (b, c), p, q in zip(names, counts, raw, adjusted, strict=True):
        deltas = paired_deltas(
            labels, verdicts[other], verdicts[name], seed=seed, confidence=1 - ALPHA / (3 * family)
        )
        verdict = "indistinguishable" if q >= ALPHA else ("better" if b > c else "worse")
        more = (
            examples_to_separate(b, c, len(labels), ALPHA / family)
            if verdict == "indistinguishable"
            else None
        )
        out[name] = Paired(
            other=other,
            only_this_right=b,
            only_other_right=c,
            p=p,
            p_adjusted=q,
            deltas={k: tuple(_finite(x) for x in v) for k, v in deltas.items()},  # type: ignore[misc]  # three deltas each
            verdict=verdict,
            examples_to_separate=more,
        )
    return out


def _finite(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def _candidate(
    m: Measured, verdicts: list[bool | None], vs_best: Paired | None, vs_base: Paired | None
) -> Candidate:
    r, spec = m.report, m.spec
    return Candidate(
        name=spec.name,
        source=r.judge.source if r.judge else "live",
        setting=Setting(
            model=spec.model if spec.live else None,
            variant=str(spec.variant) if spec.variant else None,
            trials=spec.criterion.judge.trials if spec.live else None,  # type: ignore[union-attr]  # a live Spec judges
            verdicts=(f"{spec.verdicts}#{spec.column}" if spec.column else str(spec.verdicts))
            if spec.verdicts
            else None,
            fingerprint=r.fingerprint if spec.live else None,
        ),
        n=r.n,
        abstained=r.abstained,
        confusion=r.confusion.model_dump(),
        metrics=dict(r.metrics),
        intervals={k: tuple(v) for k, v in r.intervals.items()},  # type: ignore[misc]  # (low, high) pairs
        flip_rate=r.consistency.flip_rate if r.consistency else None,
        gate=m.decision.status,
        gate_reasons=list(m.decision.reasons),
        cost=m.cost,
        grid="".join(_CHAR[v] for v in verdicts),
        vs_best=vs_best,
        vs_baseline=vs_base,
    )


def _examples(
    order: list[str], labels: list[bool], verdicts: dict[str, list[bool | None]]
) -> list[ComparedExample]:
    """The examples, those that separate candidates first (the most evenly split first), then the
    set's order."""
    rows = []
    for i, (eid, label) in enumerate(zip(order, labels, strict=True)):
        right = sum(1 for v in verdicts.values() if v[i] == label)
        split = min(right, len(verdicts) - right)
        rows.append(
            (
                -split,
                i,
                ComparedExample(
                    id=eid, label=label, separates=len({v[i] for v in verdicts.values()}) > 1
                ),
            )
        )
    rows.sort(key=lambda row: (not row[2].separates, row[0], row[1]))
    return [row[2] for row in rows]


def _kappa_low(c: Candidate) -> float:
    low = (c.intervals.get("cohen_kappa") or (None, None))[0]
    return low if low is not None else -math.inf


def _answers(c: Candidate) -> float | None:
    """Answers asked (or cached) per verdict: a candidate of 3 trials makes 3."""
    calls = c.cost.calls + c.cost.cached
    return calls / c.n if calls and c.n else None


def _latency(c: Candidate) -> float | None:
    """Seconds of answers per verdict: the median answer's latency times the answers per verdict."""
    answers = _answers(c)
    return c.cost.latency_p50_s * answers if c.cost.latency_p50_s is not None and answers else None


NOISY = 1.1  # a latency within 10% of the fastest one is as fast: latencies are noisy


def _keys(passing: Sequence[Candidate]) -> dict[str, tuple[float, float, float, float, str]]:
    """Each candidate's place among `passing`, cheapest first: cost, else latency per verdict
    (within NOISY of the fastest of equal cost is as fast), else answers per verdict; then the
    stronger evidence; then the name."""
    fastest: dict[float, float] = {}
    for c in passing:
        latency = _latency(c)
        if latency:
            fastest[_cost(c)] = min(fastest.get(_cost(c), math.inf), latency)
    return {c.name: _cheap(c, fastest) for c in passing}


def _cost(c: Candidate) -> float:
    return c.cost.per_1000_verdicts if c.cost.per_1000_verdicts is not None else math.inf


def _cheap(c: Candidate, fastest: dict[float, float]) -> tuple[float, float, float, float, str]:
    inf = math.inf
    latency, answers, cost = _latency(c), _answers(c), _cost(c)
    return (
        cost,
        # as fast as the fastest of its cost, or how much slower (a tie breaks by evidence)
        (0.0 if latency <= fastest[cost] * NOISY else latency) if latency else inf,
        answers if answers is not None else inf,
        -_kappa_low(c),
        c.name,
    )


def front(candidates: Sequence[Candidate]) -> list[str]:
    """Those with a known cost that no other beats on both cost and kappa's lower bound, cheapest
    first."""
    priced = sorted(
        (c for c in candidates if c.cost.per_1000_verdicts is not None),
        key=lambda c: (c.cost.per_1000_verdicts, -_kappa_low(c), c.name),
    )
    out, best_low = [], -math.inf
    for c in priced:
        if _kappa_low(c) > best_low:
            out.append(c.name)
            best_low = _kappa_low(c)
    return out


def recommend(candidates: Sequence[Candidate]) -> Recommendation:
    passed = [c for c in candidates if c.gate == "PASS"]
    keys = _keys(passed)
    passing = sorted(passed, key=lambda c: keys[c.name])
    on_front = front(candidates)
    if passing:
        chosen = passing[0]
        why = (
            f"{chosen.name}: the gate passes it "
            f"({chosen.gate_reasons[0] if chosen.gate_reasons else 'PASS'})"
        )
        if len(passing) == 1:
            why += ", the only candidate that passes"
        else:
            runner_up = passing[1]
            cost, latency, answers = (
                chosen.cost.per_1000_verdicts,
                _latency(chosen),
                _answers(chosen),
            )
            key, other = keys[chosen.name], keys[runner_up.name]
            why += f", and of the {len(passing)} that pass it is " + (
                f"the cheapest (${cost:.4f} per 1,000 verdicts)"
                if cost is not None and key[0] < other[0]
                else f"the fastest ({latency:.2f} s of answers per verdict; no price known)"
                if latency is not None and key[:2] < other[:2]
                else f"the one asking fewest answers per verdict ({answers:g})"
                if answers is not None and key[:3] < other[:3]
                else "the one with the strongest evidence (kappa's lower bound), "
                "the others costing as much"
            )
        return Recommendation(candidate=chosen.name, why=why, front=on_front)
    closest = max(
        candidates,
        key=lambda c: (c.gate == "INCONCLUSIVE", -len(c.gate_reasons), _kappa_low(c), _neg(c.name)),
    )
    return Recommendation(
        candidate=None,
        why=f"no candidate passes the gate; the closest is {closest.name} ({closest.gate})",
        front=on_front,
        closest=closest.name,
        blocked_by=list(closest.gate_reasons),
    )
