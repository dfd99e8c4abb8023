"""Coverage and width of TNR / TPR intervals with the unbiased (mixed Newton) point estimate and a
second round that gives every stratum at least 2 labels (issue 34 item 1): benchmarks/selection.py's
set-ups (pool 5,000), two rounds. The interval is judgekit's (design_calibration), widened to hold
the new point estimate when it falls outside.

    nice -n 15 python benchmarks/selection_cover.py --reps 500
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from benchmarks.selection import POOL, pool, random_design, truth
from benchmarks.tnr_exact import chat_mix, newton2d_coef
from judgekit.stats.allocation import Stratum, allocate
from judgekit.stats.design import design_calibration
from judgekit.stats.drawn import Drawn

MIN2 = 2
OMEGA = 0.5


def cells(good, verdict, idx):
    return (
        int((good[idx] & verdict[idx]).sum()),
        int((~good[idx] & verdict[idx]).sum()),
        int((~good[idx] & ~verdict[idx]).sum()),
        int((good[idx] & ~verdict[idx]).sum()),
    )


def stratified(rng, good, verdict, strata_of, n, min2=MIN2):
    names = sorted(set(strata_of))
    members = {s: rng.permutation(np.flatnonzero(strata_of == s)) for s in names}
    sizes = tuple((s, int(members[s].size)) for s in names)
    taken = {s: 0 for s in names}
    first = {}
    current = None
    for r, size in enumerate((n // 2, n - n // 2)):
        strata = {
            s: Stratum(members[s].size, taken[s], cells(good, verdict, members[s][: taken[s]]))
            for s in names
        }
        extra = {s: min(min2, members[s].size - taken[s]) if r == 1 else 0 for s in names}
        got = allocate(strata, size - sum(extra.values()), "tnr", current)
        for s in names:
            taken[s] += got[s] + extra[s]
        if r == 0:
            first = dict(taken)
        chosen = np.concatenate([members[s][: taken[s]] for s in names])
        drawn = [Drawn("pool", str(strata_of[i]), sizes) for i in chosen]
        result = design_calibration(list(good[chosen]), list(verdict[chosen]), drawn)
        current = result.metrics["tnr"]
    passes = {s: s.startswith("pass") for s in names}

    def rounds(s, cell):
        m = members[s]
        return (
            m.size,
            first[s],
            cells(good, verdict, m[: first[s]])[cell],
            taken[s] - first[s],
            cells(good, verdict, m[first[s] : taken[s]])[cell],
        )

    pp = [rounds(s, 1) for s in names if passes[s]]
    ff = [rounds(s, 3) for s in names if not passes[s]]
    Nf = sum(members[s].size for s in names if not passes[s])
    Np = POOL - Nf
    tnr = 1 - newton2d_coef(chat_mix(pp, OMEGA, min2), chat_mix(ff, OMEGA, min2), Nf)
    tpr = 1 - newton2d_coef(chat_mix(ff, OMEGA, min2), chat_mix(pp, OMEGA, min2), Np)
    return result, {"tnr": tnr, "tpr": tpr}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--seed", type=int, default=20261207)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    print(
        "| bad | TPR / TNR | labels | design | TNR coverage | TPR coverage | TNR width "
        "| TNR sd of estimate |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for bad, tpr, tnr in ((0.2, 0.9, 0.8), (0.1, 0.95, 0.7), (0.3, 0.85, 0.9)):
        for n in (60, 200):
            out = {
                k: {"tnr": [], "tpr": [], "width": [], "err": []}
                for k in ("random", "verdict", "verdict+sure")
            }
            for _ in range(args.reps):
                good, verdict, unsure = pool(rng, bad, tpr, tnr)
                t_tpr, t_tnr, _ = truth(good, verdict)
                by_verdict = np.where(verdict, "pass", "fail")
                by_sure = np.char.add(by_verdict, np.where(unsure, "?", ""))
                r = random_design(rng, good, verdict, n)
                res = {
                    "random": (r, {"tnr": r.metrics["tnr"], "tpr": r.metrics["tpr"]}),
                    "verdict": stratified(rng, good, verdict, by_verdict, n),
                    "verdict+sure": stratified(rng, good, verdict, by_sure, n),
                }
                for name, (r, est) in res.items():
                    for rate, true in (("tnr", t_tnr), ("tpr", t_tpr)):
                        low, high = r.intervals[rate]
                        e = est[rate]
                        if not math.isnan(low) and math.isfinite(e):
                            low, high = min(low, e), max(high, e)
                        out[name][rate].append(
                            bool(low <= true <= high) if not math.isnan(low) else False
                        )
                        if rate == "tnr":
                            out[name]["width"].append(high - low if not math.isnan(low) else 1.0)
                            out[name]["err"].append(e - true if math.isfinite(e) else math.nan)
            for name, o in out.items():

                def cov(h):
                    return (
                        f"{np.mean(h):.3f} ± "
                        f"{math.sqrt(np.mean(h) * (1 - np.mean(h)) / len(h)):.3f}"
                    )

                print(
                    f"| {bad} | {tpr} / {tnr} | {n} | {name} | {cov(o['tnr'])} | {cov(o['tpr'])} | "
                    f"{np.mean(o['width']):.3f} | {np.nanstd(o['err']):.3f} |",
                    flush=True,
                )
    print(f"\n{args.reps} pools per row, seed {args.seed}; {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
