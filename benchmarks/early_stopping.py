"""Early stopping (`calibrate --stop-early`) by simulation: how often a settled decision is
wrong, and how many judge calls it saves.

    python benchmarks/early_stopping.py

A set of 200 known-good and 200 known-bad examples in random order, judged in batches of 16;
thresholds min_tpr = min_tnr = 0.8, min_examples 20, alpha 0.05. A decision is wrong when it
says PASS while a true rate is below its threshold, or FAIL while both are at or above.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from judgekit.sequential import settle

DESIGNS = {  # name: (true TPR, true TNR)
    "clearly good (0.97 / 0.97)": (0.97, 0.97),
    "good (0.90 / 0.90)": (0.90, 0.90),
    "clearly bad (0.95 / 0.50)": (0.95, 0.50),
    "just below (0.95 / 0.78)": (0.95, 0.78),
    "just above (0.95 / 0.82)": (0.95, 0.82),
}


def one_run(rng, tpr, tnr, n_each=200, step=16):
    labels = rng.permutation(np.array([True] * n_each + [False] * n_each))
    correct = np.where(labels, rng.random(labels.size) < tpr, rng.random(labels.size) < tnr)
    look, seen = 0, 0
    while seen < labels.size:
        seen = min(labels.size, seen + step)
        look += 1
        y, ok = labels[:seen], correct[:seen]
        decision = settle((int((y & ok).sum()), int(y.sum())), (int((~y & ok).sum()), int((~y).sum())),
                          look, 0.8, 0.8, 20)
        if decision:
            return decision, seen
    return None, seen


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261130)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    print("| judge (TPR / TNR) | PASS | FAIL | unsettled | wrong decisions (± s.e.) | mean examples judged of 400 |")
    print("|---|---|---|---|---|---|")
    for name, (tpr, tnr) in DESIGNS.items():
        runs = [one_run(rng, tpr, tnr) for _ in range(args.reps)]
        counts = {d: sum(1 for r, _ in runs if r == d) / args.reps for d in ("PASS", "FAIL", None)}
        good = tpr >= 0.8 and tnr >= 0.8
        wrong = counts["FAIL"] if good else counts["PASS"]
        se = (wrong * (1 - wrong) / args.reps) ** 0.5
        mean_judged = sum(n for _, n in runs) / args.reps
        print(f"| {name} | {counts['PASS']:.3f} | {counts['FAIL']:.3f} | {counts[None]:.3f} | {wrong:.3f} ± {se:.3f} "
              f"| {mean_judged:.0f} |")
    print(f"\n({args.reps} runs per row, seed {args.seed}, {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
