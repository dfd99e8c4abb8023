"""Candidate procedures for `certify` (issue 34, item 3), none shipped: on benchmarks/selective.py's
designs, with the same draws, oracle and validity criterion, beside today's default (`today`) and
the fixed sequence alone (`fs`). `H` is a fallback over coverage levels chosen from the
confidences alone (benchmarks/README.md, under "Selective judging").

    PYTHONPATH=. python benchmarks/selective_explore.py --reps 1000 --procs today,fs,H
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass

import numpy as np
from scipy.stats import binom

from benchmarks.selective import DESIGNS, NS, TARGETS, draw, oracle_coverage, population
from judgekit.stats.selective import certify, fewest_to_certify


def prepared(label, decided, verdict, confidence):
    """Sorted by confidence (desc) over decided examples: per distinct threshold (last of tie),
    the threshold, covered count, agreeing count."""
    order = np.argsort(-confidence[decided], kind="stable")
    sure = confidence[decided][order]
    agree = (verdict == label)[decided][order]
    covered = np.arange(1, len(sure) + 1)
    hits = np.cumsum(agree)
    last = np.append(sure[1:] != sure[:-1], True) if len(sure) else np.zeros(0, bool)
    idx = np.flatnonzero(last)
    return sure[idx], covered[idx], hits[idx], len(sure)


def size_at(m, target, level):
    """The exact test's attained size at the boundary (largest P(Bin(m, target) >= k) <= level)."""
    if m < 1 or level <= 0:
        return 0.0
    k = np.arange(m + 1)
    sf = binom.sf(k - 1, m, target)
    ok = sf <= level
    return float(sf[ok][0]) if ok.any() else 0.0


@dataclass(frozen=True)
class Grid:
    """Where a fallback puts delta, by coverage level (0: the first threshold whose own share of
    delta could certify), and the level that receives what the others' exact tests cannot spend."""

    levels: tuple[float, ...]
    weights: tuple[float, ...]
    slack: int


H = Grid((0, 0.2, 0.4, 0.6, 0.8, 1.0), (0.4, 0.1, 0.1, 0.1, 0.1, 0.2), slack=5)


def _levels(ms, d, target, delta, floor, grid):
    """Each threshold's starting level (label-free: from the covered counts alone)."""
    w = np.zeros(len(ms))
    place = []
    for q, share in zip(grid.levels, grid.weights, strict=True):
        need = max(floor, fewest_to_certify(target, share * delta) if q == 0 else math.ceil(q * d))
        j = int(np.searchsorted(ms, need))
        place.append(j if j < len(ms) else None)
        if j < len(ms):
            w[j] += share * delta
    keep = np.zeros(len(ms))  # each node keeps its exact test's attained size
    for j in np.flatnonzero(w > 0):
        keep[j] = size_at(int(ms[j]), target, w[j])
    receiver = place[grid.slack]
    if receiver is not None:
        keep[receiver] = size_at(int(ms[receiver]), target, keep[receiver] + delta - keep.sum())
    return keep


def fallback(prepared_set, target, delta, min_covered, grid=H):
    """Fallback (Wiens 2003) over every threshold from the surest down: each starts with its
    level, a rejected one passes its whole level on; the lowest threshold rejected, or None."""
    ts, ms, ks, d = prepared_set
    if not len(ts):
        return None
    w = _levels(ms, d, target, delta, max(min_covered, 1), grid)
    if not (w > 0).any():
        return None
    p = binom.sf(ks - 1, ms, target)
    carry, last = 0.0, -1
    for j in range(len(ts)):
        alpha = carry + w[j]
        if p[j] <= alpha:
            last, carry = j, alpha
        else:
            carry = 0.0
    return None if last < 0 else float(ts[last])


def make_procs():
    """name -> function(label, decided, verdict, confidence, target, delta, min_covered, keys)."""

    def today(label, decided, verdict, conf, setting, keys):
        target, delta, mc = setting
        given = np.where(decided, verdict, None)
        return certify(label, given, conf, target, delta, mc, keys).threshold

    def fs(label, decided, verdict, conf, setting, keys):
        target, delta, mc = setting
        given = np.where(decided, verdict, None)
        return certify(label, given, conf, target, delta, mc, keys, "fixed-sequence").threshold

    def h(label, decided, verdict, conf, setting, keys):
        target, delta, mc = setting
        return fallback(prepared(label, decided, verdict, conf), target, delta, mc)

    return {"today": today, "fs": fs, "H": h}


def run(design, n, reps, seed, names, procs):
    rng = np.random.default_rng([seed, DESIGNS.index(design), n])
    exact, _ = population(design)
    keys = [f"ex-{i}" for i in range(n)]
    # per target, per proc: valid, none, coverage sum
    out = np.zeros((len(TARGETS), len(names), 3))
    for start in range(0, reps, 100):
        labels, decided, verdicts, conf = draw(rng, design, min(100, reps - start), n)
        for i in range(len(labels)):
            for j, (target, delta, mc) in enumerate(TARGETS):
                for p, name in enumerate(names):
                    t = procs[name](
                        labels[i], decided[i], verdicts[i], conf[i], (target, delta, mc), keys
                    )
                    if t is None:
                        out[j, p] += [1, 1, 0]
                        continue
                    a, c = exact(t)
                    out[j, p] += [float(a) >= target, 0, float(c)]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--procs", default="today,fs,H")
    ap.add_argument("--designs", default=",".join(DESIGNS))
    ap.add_argument("--ns", default=",".join(map(str, NS)))
    args = ap.parse_args()
    procs = make_procs()
    names = args.procs.split(",")
    started = time.perf_counter()
    within = dict.fromkeys(names, 0)
    rows = 0
    worst_valid = {}
    print("| design | n | target | delta | mc | oracle | " + " | ".join(names) + " |")
    for design in args.designs.split(","):
        for n in map(int, args.ns.split(",")):
            out = run(design, n, args.reps, args.seed, names, procs)
            exact, cands = population(design)
            for (target, delta, mc), per in zip(TARGETS, out, strict=True):
                oracle = oracle_coverage(exact, cands, n, target, delta)
                rows += 1
                cells = []
                for name, (valid, _none, cover) in zip(names, per, strict=True):
                    cov = cover / args.reps
                    v = valid / args.reps
                    within[name] += cov >= oracle - 0.05
                    key = (name, delta)
                    worst_valid[key] = min(worst_valid.get(key, 1.0), v)
                    mark = "" if cov >= oracle - 0.05 else "*"
                    cells.append(f"{cov:.3f}{mark} ({v:.3f})")
                print(
                    f"| {design} | {n} | {target} | {delta} | {mc} | {oracle:.3f} | "
                    + " | ".join(cells)
                    + " |",
                    flush=True,
                )
    print(f"rows {rows}; within 0.05: {within}")
    print("lowest valid:", {f"{k[0]}@{k[1]}": round(v, 3) for k, v in worst_valid.items()})
    print(f"seed {args.seed}, reps {args.reps}, {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
