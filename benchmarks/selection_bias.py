"""The bias of label --next's weighted TNR (issue 34, item 1): simulated, point estimates only.

    python benchmarks/selection_bias.py              # 300 pools per row
    python benchmarks/selection_bias.py --reps 2000

A pool (5,000 or 1,200 replies, share `bad` of them bad) is judged by a judge with the given TPR
and TNR; 40% of its wrong verdicts and 10% of its right ones are unsure. `n` labels are drawn as
`judgekit label --next` draws them (judgekit.stats.allocation, for TNR), in one round or in two of
n/2 (the second allocated from the first round's estimate), the strata the judge's verdict
(`v`) or its verdict and sureness (`v+s`). Per row, the mean error of three point estimates of
the pool's own TNR, with its Monte Carlo standard error (a `*` marks |bias| above one):

- HT: the weighted cells' rate, what judgekit reports (judgekit.stats.design);
- Taylor: HT less its second-order bias, x Var(y) - y Var(x) over (x + y)^3 for TNR = x / (x + y)
  (x the weighted true negatives, y the weighted false passes; each stratum's variance from its
  share smoothed by half a count, with the finite-population correction) — a candidate, not
  shipped;
- smoothed: the rate of cells smoothed by half a count per cell of the stratum's verdict (the
  posterior's prior), for comparison;
- rounds apart: each stratum's cells counted round by round, the replies labelled before a round
  as they are and that round's draw standing for the rest of the stratum (unbiased for each
  stratum's cells however the second round was allocated), then their rate — a candidate, not
  shipped.

`--labels 60` runs only the rows of that many labels.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from judgekit.stats.allocation import Stratum, round_allocation
from judgekit.stats.design import point_rates
from judgekit.stats.drawn import Drawn

SETUPS = ((0.2, 0.9, 0.8), (0.1, 0.95, 0.7), (0.3, 0.85, 0.9), (0.1, 0.9, 0.8), (0.2, 0.95, 0.7))


def pool(rng, size, bad, tpr, tnr):
    good = rng.random(size) >= bad
    right = np.where(good, rng.random(size) < tpr, rng.random(size) < tnr)
    verdict = np.where(right, good, ~good)
    unsure = np.where(right, rng.random(size) < 0.10, rng.random(size) < 0.40)
    return good, verdict, unsure


def cells_of(good, verdict, idx):
    """tp, fp, tn, fn of the replies at `idx`."""
    g, v = good[idx], verdict[idx]
    return np.array([(g & v).sum(), (~g & v).sum(), (~g & ~v).sum(), (g & ~v).sum()], float)


def _tnr(c):
    return c[2] / (c[2] + c[1]) if c[2] + c[1] > 0 else math.nan


def estimates(good, verdict, members, taken):
    """(HT, Taylor, smoothed) estimates of TNR from the first `taken[s]` replies of each stratum."""
    ht, smoothed = np.zeros(4), np.zeros(4)
    var_x = var_y = 0.0
    for s, m in members.items():
        k, size = taken[s], m.size
        if size == 0:
            continue
        c = cells_of(good, verdict, m[:k])
        ht += size * c / k
        passes = bool(verdict[m[0]])
        prior = np.array([0.5, 0.5, 0, 0]) if passes else np.array([0, 0, 0.5, 0.5])
        smoothed += size * (c + prior) / (k + 1)
        fpc = (size - k) / max(size - 1, 1)
        share = ((c[1] if passes else c[2]) + 0.5) / (k + 1)
        v = size * size * share * (1 - share) / k * fpc
        if passes:
            var_y += v
        else:
            var_x += v
    x, y = ht[2], ht[1]
    taylor = _tnr(ht) - ((x * var_y - y * var_x) / (x + y) ** 3 if x + y > 0 else 0.0)
    return _tnr(ht), taylor, _tnr(smoothed)


def shipped(good, verdict, members, taken, drawn_in, plan):  # noqa: PLR0913  a draw's parts
    """TPR and TNR as judgekit reports them (judgekit.stats.design.point_rates), from each labelled
    reply's stratum and round, and the pool's plan of rounds."""
    sizes = tuple((s, int(m.size)) for s, m in sorted(members.items()))
    labels, verdicts, drawn = [], [], []
    for s, m in members.items():
        for at, i in enumerate(m[: taken[s]]):
            labels.append(bool(good[i]))
            verdicts.append(bool(verdict[i]))
            drawn.append(Drawn("pool", s, sizes, at, drawn_in[s][at], plan, "tnr"))
    return point_rates(labels, verdicts, drawn)


def one(rng, size, judge, n, rounds, sure):  # noqa: PLR0913  the set-up's parts, as the table's
    """The estimates' errors on one pool; `judge` is (bad share, TPR, TNR)."""
    good, verdict, unsure = pool(rng, size, *judge)
    key = np.where(verdict, "pass", "fail")
    if sure:
        key = np.char.add(key, np.where(unsure, "?", ""))
    names = sorted(set(key))
    members = {s: rng.permutation(np.flatnonzero(key == s)) for s in names}
    taken = {s: 0 for s in names}
    apart = {s: np.zeros(4) for s in names}  # each stratum's cells, estimated round by round
    drawn_in = {s: [] for s in names}  # the round of each labelled reply, stratum by stratum
    plan = (n,) if rounds == 1 else (n // 2, n - n // 2)  # as label --next --rounds plans them
    for number, spend in enumerate(plan, start=1):
        before = dict(taken)
        strata = {
            s: Stratum(
                members[s].size,
                taken[s],
                tuple(int(x) for x in cells_of(good, verdict, members[s][: taken[s]])),
            )
            for s in names
        }
        # as label --next allocates a planned round, from the pool's own labels alone
        for s, k in round_allocation(strata, spend, "tnr", later=number > 1).items():
            taken[s] += k
            drawn_in[s] += [number] * k
            if k:
                seen = cells_of(good, verdict, members[s][: before[s]])
                drawn = cells_of(good, verdict, members[s][before[s] : taken[s]])
                apart[s] = seen + (members[s].size - before[s]) * drawn / k
    bad_ones = ~good
    true_tnr = (bad_ones & ~verdict).sum() / bad_ones.sum()
    true_tpr = (good & verdict).sum() / good.sum()
    rounds_apart = _tnr(sum(apart.values()))
    tpr, tnr = shipped(good, verdict, members, taken, drawn_in, plan)
    ht_tpr = _tpr_weighted(good, verdict, members, taken)
    tnrs = np.array([*estimates(good, verdict, members, taken), rounds_apart, tnr]) - true_tnr
    return np.array([*tnrs, ht_tpr - true_tpr, tpr - true_tpr])


def _tpr_weighted(good, verdict, members, taken):
    """The weighted cells' TPR (what judgekit reported before)."""
    tp = fn = 0.0
    for s, m in members.items():
        k = taken[s]
        if m.size and k:
            c = cells_of(good, verdict, m[:k])
            tp += m.size * c[0] / k
            fn += m.size * c[3] / k
    return tp / (tp + fn) if tp + fn > 0 else math.nan


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument("--labels", type=int, choices=(60, 200), help="only the rows of this many")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    print(
        "| pool | bad | TPR / TNR | labels | rounds | strata | HT | Taylor | smoothed | apart "
        "| shipped | TPR: HT | TPR: shipped |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    zs, biases = [], []
    for size in (5000, 1200):
        for bad, tpr, tnr in SETUPS:
            for n in (60, 200) if args.labels is None else (args.labels,):
                for rounds in (1, 2):
                    for sure in (False, True):
                        errors = np.array(
                            [
                                one(rng, size, (bad, tpr, tnr), n, rounds, sure)
                                for _ in range(args.reps)
                            ]
                        )
                        mean = np.nanmean(errors, axis=0)
                        se = np.nanstd(errors, axis=0) / math.sqrt(args.reps)
                        zs.append(mean / se)
                        biases.append(mean)
                        cells = " | ".join(
                            f"{m:+.4f} ± {e:.4f}{' *' if abs(m) > e else ''}"
                            for m, e in zip(mean, se, strict=True)
                        )
                        print(
                            f"| {size} | {bad} | {tpr} / {tnr} | {n} | {rounds} | "
                            f"{'v+s' if sure else 'v'} | {cells} |",
                            flush=True,
                        )
    print(f"\n{args.reps} pools per row; {time.perf_counter() - started:.0f} s")
    names = ("HT", "Taylor", "smoothed", "apart", "shipped", "TPR: HT", "TPR: shipped")
    z = np.array(zs)
    for name, column, worst in zip(names, z.T, np.abs(np.array(biases)).max(axis=0), strict=True):
        print(
            f"{name}: within one standard error in {int((np.abs(column) <= 1).sum())} of "
            f"{len(column)} rows, within two in {int((np.abs(column) <= 2).sum())}; "
            f"sum z^2 / rows {float((column**2).mean()):.2f} (an unbiased estimate: 1 +- "
            f"{math.sqrt(2 / len(column)):.2f}); largest |bias| {worst:.4f}"
        )


if __name__ == "__main__":
    main()
