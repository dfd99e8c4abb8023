"""Agreement estimated from a set whose examples were chosen by design (`judgekit label --next`):
pure functions, no I/O.

Labelling at random spends most labels on the class that is already settled; choosing replies by
the judge's own verdict finds the short class faster, but then each example stands for a different
share of the pool, and counting them plainly is biased (label only the replies the judge fails and
TNR comes out too high). Here each example drawn from a pool carries its **stratum** (the judge's
verdict when it was drawn, and whether the judge was sure) and the size of every stratum of that
pool; the examples of one stratum are a simple random sample of it (drawn in a fixed random order),
so the chance of each being labelled is n_h / N_h.

- **Weights** (Horvitz-Thompson, scaled): an example of stratum h stands for N_h / n_h replies of
  the pool; a pool's weights are scaled so that they add up to the number of its examples
  labelled. The set then estimates what it would had those examples been drawn at random from the
  pool beside the examples labelled some other way (weight 1 each). Point estimates are the
  weighted confusion cells' rates.
- **Intervals.** (a) A posterior per stratum over its four cells (Dirichlet, half a count per
  cell of each verdict seen there: a stratum of the judge's passes gets no pseudo-count of fails),
  the strata added by their weights, the central 95% of seeded draws. (b) For the rates (TPR,
  TNR, precision, accuracy), Wilson's score interval at the effective number of examples: p(1-p)
  over the rate's linearised variance under stratified sampling (each stratum's variance from its
  cell shares smoothed as in (a); the finite-population correction for a pool's strata), with
  Student's t at the design's degrees of freedom (examples less groups) in place of the normal z,
  taken at 97%.
  Kappa's interval is (a); a rate's is the wider of (a) and (b): (a) alone falls short when the
  prior's half counts pull small strata (60 labels over four strata), (b) alone when a rate rests
  on a few rare events in a large stratum (200 labels); `benchmarks/selection.py` measures them.
- **Each pool alone.** The set's figures mix a pool with the examples labelled some other way;
  `by_pool` gives each pool's own (its drawn examples, weighted within it), which the gate checks
  too: a curated set cannot hide what the judge does on production replies.
- **Allocation** (judgekit.stats.allocation): the next labels go where they shrink the deciding
  rate's variance most, one in every stratum before a second in any.

>>> sizes = (("pass", 80), ("fail", 20))
>>> d = [Drawn("p", "pass", sizes), Drawn("p", "fail", sizes)] * 2
>>> [round(w, 2) for w in weights(d)]
[1.6, 0.4, 1.6, 0.4]
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from judgekit.stats.drawn import Drawn, planned_rounds, pools
from judgekit.stats.metrics import (
    CONFIDENCE,
    NAN,
    Calibration,
    Confusion,
    confusion,
    kappa_from_counts,
    mcc_from_counts,
    ratio,
)
from judgekit.stats.unbiased import LEAST, SERIES_CAP, StratumDraws, rates

if TYPE_CHECKING:  # numpy is imported inside the functions that need it, not with the module
    import numpy as np
    from numpy.typing import NDArray

PRIOR = 0.5  # per cell of a stratum's 2x2 table: Jeffreys
MIN_PER_STRATUM = 2
WIDER = 0.02  # (b) at 97%: with (b) at 95% or 96% the pair covered 94.3-94.4% in one benchmark row
# the cells of each rate: numerator, denominator (indices into tp, fp, tn, fn)
RATES = {
    "tpr": ((0,), (0, 3)),
    "tnr": ((2,), (2, 1)),
    "precision": ((0,), (0, 1)),
    "accuracy": ((0, 2), (0, 1, 2, 3)),
}


def groups(drawn: Sequence[Drawn | None]) -> tuple[list[str], dict[str, float]]:
    """Each example's group ("" for examples not drawn by design) and each group's mass: a pool's
    strata share the number of its examples in the set by their sizes; the rest count one each
    (the records checked first: judgekit.stats.drawn.pools)."""
    keys = ["" if d is None else f"{d.pool}\0{d.stratum}" for d in drawn]
    counts = Counter(keys)
    mass: dict[str, float] = {"": float(counts[""])} if counts[""] else {}
    for pool, sizes in pools(drawn).items():
        total, n = sum(sizes.values()), sum(counts[f"{pool}\0{s}"] for s in sizes)
        for s, size in sizes.items():
            if size:
                mass[f"{pool}\0{s}"] = n * size / total
    return keys, mass


def weights(drawn: Sequence[Drawn | None]) -> list[float]:
    """Each example's weight: 1 when not drawn by design, else its stratum's mass over its
    examples."""
    keys, mass = groups(drawn)
    counts = Counter(keys)
    return [mass[k] / counts[k] for k in keys]


def weighted_cells(
    labels: Sequence[bool], verdicts: Sequence[bool | None], weights_: Sequence[float]
) -> tuple[float, float, float, float]:
    """tp, fp, tn, fn, each example counted by its weight (abstentions left out)."""
    cells = [0.0, 0.0, 0.0, 0.0]
    for label, verdict, w in zip(labels, verdicts, weights_, strict=True):
        if verdict is not None:
            cells[_cell(label, verdict)] += w
    return cells[0], cells[1], cells[2], cells[3]


def _cell(label: bool, verdict: bool) -> int:
    return (0 if label else 1) if verdict else (3 if label else 2)


def _by_group(
    keys: Sequence[str], labels: Sequence[bool], verdicts: Sequence[bool | None]
) -> tuple[dict[str, list[int]], Counter[str]]:
    """Each group's decided examples by cell (tp, fp, tn, fn), and each group's examples."""
    per_group: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for key, label, verdict in zip(keys, labels, verdicts, strict=True):
        if verdict is not None:
            per_group[key][_cell(label, verdict)] += 1
    return per_group, Counter(keys)


def posterior(
    labels: Sequence[bool],
    verdicts: Sequence[bool | None],
    drawn: Sequence[Drawn | None],
    seed: int = 0,
    draws: int = 9999,
) -> NDArray[np.float64]:
    """Draws of the population's weighted cells (draws x 4: tp, fp, tn, fn): per group a Dirichlet
    over its decided examples' cells, times the group's decided mass."""
    import numpy as np

    keys, mass = groups(drawn)
    per_group, seen = _by_group(keys, labels, verdicts)
    rng = np.random.default_rng(seed)
    total = np.zeros((draws, 4))
    for key in sorted(per_group):
        cells = np.array(per_group[key], dtype=float)
        decided_mass = mass[key] * cells.sum() / seen[key]
        # The prior goes to the verdicts seen in the group (a stratum of the judge's passes holds
        # only passes when it is the judge calibrated): half a count per label under each of them.
        seen_verdicts = [(cells[0] + cells[1]) > 0, (cells[2] + cells[3]) > 0]
        alpha = cells + PRIOR * np.array([seen_verdicts[0]] * 2 + [seen_verdicts[1]] * 2)
        live = alpha > 0
        share = np.zeros((draws, 4))
        share[:, live] = rng.dirichlet(alpha[live], size=draws)
        total += decided_mass * share
    return total


def design_calibration(
    labels: Sequence[bool],
    verdicts: Sequence[bool | None],
    drawn: Sequence[Drawn | None],
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> Calibration:
    """TPR, TNR, kappa and accuracy of a set drawn by design, weighted (a pool's own TPR and TNR
    without a ratio's bias where `point_rates` can), with their intervals; the confusion matrix and
    abstentions are the examples' own counts (what was labelled)."""
    return _design(labels, verdicts, drawn, seed, confidence)[0]


def _design(
    labels: Sequence[bool],
    verdicts: Sequence[bool | None],
    drawn: Sequence[Drawn | None],
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> tuple[Calibration, tuple[str, ...]]:
    """`design_calibration`, and the rates it estimated without a ratio's bias."""
    import numpy as np

    c, abstained = confusion(labels, verdicts)
    weighted = weighted_cells(labels, verdicts, weights(drawn))
    tp, fp, tn, fn = weighted
    tpr, tnr, unbiased = _rates(labels, verdicts, drawn, weighted)
    metrics = {
        "tpr": tpr,
        "tnr": tnr,
        "precision": ratio(tp, tp + fp),
        "npv": ratio(tn, tn + fn),
        "accuracy": ratio(tp + tn, tp + fp + tn + fn),
        "balanced_accuracy": (tpr + tnr) / 2,
        "f1": ratio(2 * tp, 2 * tp + fp + fn),
        "f1_fail": ratio(2 * tn, 2 * tn + fn + fp),
        "macro_f1": (ratio(2 * tp, 2 * tp + fp + fn) + ratio(2 * tn, 2 * tn + fn + fp)) / 2,
        "cohen_kappa": kappa_from_counts(tp, fp, tn, fn),
        "mcc": mcc_from_counts(tp, fp, tn, fn),
        "prevalence": ratio(tp + fn, tp + fp + tn + fn),
    }
    intervals: dict[str, tuple[float, float]] = {}
    if c.decided:
        cells = posterior(labels, verdicts, drawn, seed)
        t = cells.T
        with np.errstate(divide="ignore", invalid="ignore"):
            sampled = {
                "tpr": t[0] / (t[0] + t[3]),
                "tnr": t[2] / (t[2] + t[1]),
                "precision": t[0] / (t[0] + t[1]),
                "accuracy": (t[0] + t[2]) / cells.sum(axis=1),
            }
            n = cells.sum(axis=1)
            expected = ((t[0] + t[1]) * (t[0] + t[3]) + (t[2] + t[3]) * (t[2] + t[1])) / (n * n)
            sampled["cohen_kappa"] = (t[0] / n + t[2] / n - expected) / (1 - expected)
        tail = 100 * (1 - confidence) / 2
        for name, values in sampled.items():
            estimate = metrics[name]
            values = values[np.isfinite(values)]
            if (
                math.isnan(estimate)
                or not values.size
                or (name in ("tpr", "tnr", "precision") and _empty(name, c))
            ):
                intervals[name] = (NAN, NAN)
                continue
            low, high = np.percentile(values, [tail, 100 - tail])
            if name in RATES:  # the wider of the two: each covers where the other can fall short
                w_low, w_high = _wilson_design(
                    name, labels, verdicts, drawn, estimate, confidence + WIDER
                )
                low, high = min(low, w_low), max(high, w_high)
            intervals[name] = (float(min(low, estimate)), float(max(high, estimate)))
    else:
        intervals = {
            name: (NAN, NAN) for name in ("tpr", "tnr", "precision", "accuracy", "cohen_kappa")
        }
    return Calibration(c, len(labels), abstained, metrics, intervals), unbiased


def point_rates(
    labels: Sequence[bool], verdicts: Sequence[bool | None], drawn: Sequence[Drawn | None]
) -> tuple[float, float]:
    """TPR and TNR as the report gives them: a pool's own without the weighted ratios' bias where
    `_unbiased` applies, else the weighted cells' ratios (NaN for a class none of whose examples
    has a verdict)."""
    tpr, tnr, _ = _rates(labels, verdicts, drawn, weighted_cells(labels, verdicts, weights(drawn)))
    return tpr, tnr


def _rates(
    labels: Sequence[bool],
    verdicts: Sequence[bool | None],
    drawn: Sequence[Drawn | None],
    cells: tuple[float, float, float, float],
) -> tuple[float, float, tuple[str, ...]]:
    """`point_rates` from the weighted `cells`, and which of the two are estimated without a
    ratio's bias."""
    tp, fp, tn, fn = cells
    weighted = (ratio(tp, tp + fn), ratio(tn, tn + fp))
    found = _unbiased(labels, verdicts, drawn, cells)
    out: list[float] = []
    unbiased: list[str] = []
    for name, value, plain in zip(("tpr", "tnr"), found, weighted, strict=True):
        if value is None or math.isnan(plain):  # none labelled of the class: undefined as before
            out.append(plain)
        else:
            out.append(value)
            unbiased.append(name)
    return out[0], out[1], tuple(unbiased)


def _unbiased(
    labels: Sequence[bool],
    verdicts: Sequence[bool | None],
    drawn: Sequence[Drawn | None],
    cells: tuple[float, float, float, float],
) -> tuple[float | None, float | None]:
    """TPR and TNR of a set that is one pool's draw, without the weighted ratios' bias
    (judgekit.stats.unbiased), where it applies: every example drawn from the one pool, each
    stratum's verdicts the judge's on all of it (its labelled replies judged alike: another judge
    than the one that drew them cuts across the strata), and the rate's errors fewer than its
    right verdicts (past that the series swings; the weighted rate stands), and its labels drawn
    in one round, or in rounds of the plan `label --next --rounds` fixed before the first draw,
    each drawn whole (the rounds are weighed by their planned sizes: weights taken from the sizes
    drawn would bias it) and giving every stratum with replies left LEAST labels. None where not.
    """
    draws = [d for d in drawn if d is not None]
    if not draws or len(draws) != len(drawn) or len({d.pool for d in draws}) != 1:
        return None, None
    plan = planned_rounds(draws)
    if plan is None:
        return None, None
    members: dict[str, list[int]] = defaultdict(list)
    for i, d in enumerate(draws):
        members[d.stratum].append(i)
    strata = []
    for stratum, size in draws[0].sizes:
        said = {verdicts[i] for i in members[stratum]}
        if said == {None} or not size:  # the judge's abstentions: no side of either rate
            continue
        if len(said) != 1:
            return None, None
        passes = said == {True}
        rounds = [[0, 0] for _ in plan]
        for i in members[stratum]:
            at = rounds[(draws[i].round or 1) - 1]
            at[0] += 1
            at[1] += labels[i] != passes  # counted: a known-bad pass, a known-good fail
        left = size
        for r, (n, _) in enumerate(rounds):
            if n < min(LEAST if r else 1, left):  # a stratum's rest guessed from too few
                return None, None
            left -= n
        strata.append(StratumDraws(size, passes, tuple((n, b) for n, b in rounds)))
    tp, fp, tn, fn = cells
    counted = [sum(b for _, b in x.rounds) for x in strata]
    if not (fn <= tp or fp <= tn) or sum(counted) > SERIES_CAP:
        return None, None
    tpr, tnr = rates(strata, plan if len(plan) > 1 else None)
    return (
        min(max(tpr, 0.0), 1.0) if fn <= tp else None,
        min(max(tnr, 0.0), 1.0) if fp <= tn else None,
    )


class PoolFigures(NamedTuple):
    """One pool's own figures (`by_pool`): its calibration, the share of it the judge abstains on,
    and which of its rates are estimated without a ratio's bias (the others are weighted ratios)."""

    calibration: Calibration
    abstained: float
    without_bias: tuple[str, ...]


def by_pool(
    labels: Sequence[bool], verdicts: Sequence[bool | None], drawn: Sequence[Drawn | None]
) -> dict[str, PoolFigures]:
    """Each pool's own figures: its drawn examples alone, weighted within it. The set's figures mix
    the pool with the examples labelled some other way (as labelling at random would); these say
    what the judge does on the pool, which drawing from production is for."""
    out = {}
    for pool in sorted({d.pool for d in drawn if d is not None}):
        mine = [i for i, d in enumerate(drawn) if d is not None and d.pool == pool]
        own = [drawn[i] for i in mine]
        w = weights(own)
        abstained = sum(x for x, i in zip(w, mine, strict=True) if verdicts[i] is None) / sum(w)
        found, unbiased = _design([labels[i] for i in mine], [verdicts[i] for i in mine], own)
        out[pool] = PoolFigures(found, abstained, unbiased)
    return out


def _wilson_design(
    name: str,
    labels: Sequence[bool],
    verdicts: Sequence[bool | None],
    drawn: Sequence[Drawn | None],
    estimate: float,
    confidence: float,
) -> tuple[float, float]:
    """Wilson's interval at the effective number of examples of a weighted rate: p(1-p) over its
    linearised variance under stratified sampling, at the smoothed rate (each group's cell shares
    with half a count added to each label under each verdict seen there, so that a cell never seen
    still varies; a pool's strata with the finite-population correction), with Student's t at the
    design's degrees of freedom (examples less groups) in place of the normal z."""
    # Student's t quantile, without loading scipy.stats (a second)
    from scipy.special import (
        stdtrit,
    )

    keys, mass = groups(drawn)
    numerator, denominator = RATES[name]
    per_group, seen = _by_group(keys, labels, verdicts)
    sizes: dict[str, int] = {}
    for d in drawn:
        if d is not None:
            sizes.update({f"{d.pool}\0{s}": n for s, n in d.sizes})
    smoothed: dict[str, list[float]] = {}
    decided: dict[str, float] = {}
    for key, cells in per_group.items():
        column = [cells[0] + cells[1] > 0, cells[2] + cells[3] > 0]
        smoothed[key] = [k + PRIOR * column[0 if i < 2 else 1] for i, k in enumerate(cells)]
        decided[key] = mass[key] * sum(cells) / seen[key]
    top = sum(decided[k] * sum(c[i] for i in numerator) / sum(c) for k, c in smoothed.items())
    bottom = sum(decided[k] * sum(c[i] for i in denominator) / sum(c) for k, c in smoothed.items())
    if bottom <= 0:
        return NAN, NAN
    smooth = top / bottom  # inside (0, 1) even when every example agrees
    z = [
        (1.0 if i in numerator else 0.0) - smooth * (1.0 if i in denominator else 0.0)
        for i in range(4)
    ]
    parts = []  # each group's part of the variance, and its examples less one
    for key, smooth_cells in smoothed.items():
        shares = [k / sum(smooth_cells) for k in smooth_cells]
        mean = sum(p * v for p, v in zip(shares, z, strict=True))
        spread = sum(p * v * v for p, v in zip(shares, z, strict=True)) - mean * mean
        fpc = max(1 - seen[key] / sizes[key], 0.0) if key in sizes else 1.0
        n = sum(per_group[key])
        parts.append((decided[key] ** 2 * fpc * spread / n, n - 1))
    total = sum(v for v, _ in parts)
    # the design's degrees of freedom: examples less groups (a pool labelled whole loses none)
    freedom = sum(n for _, n in parts) if total > 0 else math.inf
    zq = float(stdtrit(max(freedom, 1), 0.5 + confidence / 2))
    p = min(max(estimate, 0.0), 1.0)
    effective = smooth * (1 - smooth) / (total / (bottom * bottom)) if total > 0 else bottom
    centre = (p + zq * zq / (2 * effective)) / (1 + zq * zq / effective)
    half = (
        zq
        / (1 + zq * zq / effective)
        * math.sqrt(p * (1 - p) / effective + zq * zq / (4 * effective**2))
    )
    return max(0.0, centre - half), min(1.0, centre + half)


def _empty(name: str, c: Confusion) -> bool:
    """A rate none of whose examples were labelled has no interval: the prior is not evidence."""
    return {"tpr": c.tp + c.fn, "tnr": c.tn + c.fp, "precision": c.tp + c.fp}[name] == 0
