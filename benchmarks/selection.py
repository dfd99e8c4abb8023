"""Choosing the next examples to label by the judge's verdict (judgekit.stats.design), simulated.

    python benchmarks/selection.py              # 2,000 pools per row
    python benchmarks/selection.py --pool 1200  # pools of 1,200 replies
    python benchmarks/selection.py --rounds 1   # the labels drawn in one round

A pool of 5,000 unlabelled replies (or `--pool`; share `bad` of them bad) is judged by a judge
with the given TPR and TNR; 40% of its wrong verdicts and 10% of its right ones come with a low
confidence (trials that disagree). `n` labels are spent in two planned rounds of n/2 (the second
allocated from what the first found, 2 new labels in every stratum first; `--rounds 1`: in one),
four ways:

- random:   n replies drawn at random, counted plainly, Wilson intervals (judgekit today);
- naive:    drawn within the judge's verdicts as `verdict` does, but counted plainly (the trap);
- verdict:  strata = the judge's verdict, Neyman allocation for TNR, weighted estimates and the
            stratified posterior intervals (judgekit label --next, a judge without confidence);
- verdict+sure: strata = verdict x sure/unsure (a judge with trials or log-probabilities).

The truth is the pool's own TPR, TNR and kappa. Reported: coverage of the 95% intervals of TNR
(the deciding rate: the bad replies are the short class), TPR and kappa, with the Monte Carlo
standard error, and the mean width of TNR's interval (a missing interval counts as width 1).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from judgekit.stats.allocation import Stratum, round_allocation
from judgekit.stats.design import design_calibration
from judgekit.stats.drawn import Drawn
from judgekit.stats.metrics import calibration, kappa_from_counts

POOL = 5000


def pool(rng, bad, tpr, tnr, size=POOL):  # noqa: PLR0913  a judge's three figures and the size
    good = rng.random(size) >= bad
    right = np.where(good, rng.random(size) < tpr, rng.random(size) < tnr)
    verdict = np.where(right, good, ~good)
    unsure = np.where(right, rng.random(size) < 0.10, rng.random(size) < 0.40)
    return good, verdict, unsure


def truth(good, verdict):
    tp, fp = (good & verdict).sum(), (~good & verdict).sum()
    tn, fn = (~good & ~verdict).sum(), (good & ~verdict).sum()
    return tp / (tp + fn), tn / (tn + fp), kappa_from_counts(tp, fp, tn, fn)


def random_design(rng, good, verdict, n):
    pick = rng.choice(good.size, n, replace=False)
    return calibration(list(good[pick]), list(verdict[pick]))


def stratified(rng, good, verdict, strata_of, n, weighted=True, rounds=2):  # noqa: PLR0913
    names = sorted(set(strata_of))
    members = {s: rng.permutation(np.flatnonzero(strata_of == s)) for s in names}
    sizes = tuple((s, int(members[s].size)) for s in names)
    taken = {s: 0 for s in names}
    drawn_in = {s: [] for s in names}  # the round of each labelled reply, stratum by stratum
    plan = (n // 2, n - n // 2) if rounds == 2 else (n,)  # as label --next N/2 --rounds 2 plans
    for number, size in enumerate(plan, start=1):
        strata = {}
        for s in names:
            idx = members[s][: taken[s]]
            cells = (
                int((good[idx] & verdict[idx]).sum()),
                int((~good[idx] & verdict[idx]).sum()),
                int((~good[idx] & ~verdict[idx]).sum()),
                int((good[idx] & ~verdict[idx]).sum()),
            )
            strata[s] = Stratum(members[s].size, taken[s], cells)
        # as label --next allocates a planned round, from the pool's own labels alone
        for s, k in round_allocation(strata, size, "tnr", later=number > 1).items():
            taken[s] += k
            drawn_in[s] += [number] * k
        chosen = np.concatenate([members[s][: taken[s]] for s in names])
        drawn = [
            Drawn("pool", s, sizes, at, drawn_in[s][at], plan, "tnr")
            for s in names
            for at in range(taken[s])
        ]
        if weighted:
            result = design_calibration(list(good[chosen]), list(verdict[chosen]), drawn)
        else:
            result = calibration(list(good[chosen]), list(verdict[chosen]))
    return result


def row(rng, reps, bad, tpr, tnr, n, size=POOL, rounds=2):  # noqa: PLR0913  a set-up, as the table's
    out = {
        k: {"tnr": [], "tpr": [], "cohen_kappa": [], "width": []}
        for k in ("random", "naive", "verdict", "verdict+sure")
    }
    for _ in range(reps):
        good, verdict, unsure = pool(rng, bad, tpr, tnr, size)
        true_tpr, true_tnr, true_kappa = truth(good, verdict)
        by_verdict = np.where(verdict, "pass", "fail")
        by_sure = np.char.add(by_verdict, np.where(unsure, "?", ""))
        results = {
            "random": random_design(rng, good, verdict, n),
            "naive": stratified(rng, good, verdict, by_verdict, n, False, rounds),
            "verdict": stratified(rng, good, verdict, by_verdict, n, True, rounds),
            "verdict+sure": stratified(rng, good, verdict, by_sure, n, True, rounds),
        }
        for name, r in results.items():
            for rate, true in (("tnr", true_tnr), ("tpr", true_tpr), ("cohen_kappa", true_kappa)):
                low, high = r.intervals[rate]
                out[name][rate].append(bool(low <= true <= high) if not math.isnan(low) else False)
            low, high = r.intervals["tnr"]
            out[name]["width"].append(high - low if not math.isnan(low) else 1.0)
    return out


def share(hits):
    p = sum(hits) / len(hits)
    return f"{p:.3f} ± {math.sqrt(p * (1 - p) / len(hits)):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--pool", type=int, default=POOL, help="replies in each simulated pool")
    parser.add_argument("--rounds", type=int, choices=(1, 2), default=2, help="rounds of labels")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    print(
        "| bad share | judge TPR / TNR | labels | design | TNR coverage | TPR coverage "
        "| kappa coverage | TNR width |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for bad, tpr, tnr in ((0.2, 0.9, 0.8), (0.1, 0.95, 0.7), (0.3, 0.85, 0.9), (0.2, 0.95, 0.7)):
        for n in (60, 200):
            out = row(rng, args.reps, bad, tpr, tnr, n, args.pool, args.rounds)
            for name, o in out.items():
                print(
                    f"| {bad} | {tpr} / {tnr} | {n} | {name} | {share(o['tnr'])} | "
                    f"{share(o['tpr'])} | {share(o['cohen_kappa'])} | {np.mean(o['width']):.3f} |",
                    flush=True,
                )
    print(f"\n{args.reps} pools per row; {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
