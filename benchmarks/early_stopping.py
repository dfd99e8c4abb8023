"""Early stopping (`calibrate --stop-early`) against the full-set gate, on the same simulated
data: how often each decides wrong, how often they differ, and how many judge calls stopping saves.

    python benchmarks/early_stopping.py              # 1,000 runs per row

Each run draws a set of N known-good and N known-bad examples (N = 25, 50, 200, 1000) and a judge
right on each known-good example with probability TPR and on each known-bad one with TNR,
independently; the examples are judged in random order in batches of 16 (the runner's batch at
the default concurrency), and `settle` is asked after each batch, with the default policy
(min_tpr = min_tnr = 0.8, min_examples 20).

The full-set gate decides on all 2N verdicts, by the gate's rule: Wilson 95% intervals, PASS when
both lower bounds are at or above 0.8 (and 20 examples of each class), FAIL when an upper bound is
below, else INCONCLUSIVE. Early stopping's decision is the settled one, or the full-set gate's
when it never settled (it then judged everything). A decision is wrong when it says PASS while a
true rate is below 0.8, or FAIL while both are at or above.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from judgekit.inputs.policy import Thresholds
from judgekit.stats.metrics import wilson
from judgekit.stats.sequential import settle

POLICY = Thresholds()  # min_tpr = min_tnr = 0.8, min_examples 20
SIZES = (25, 50, 200, 1000)
JUDGES = [(r, r) for r in (0.75, 0.78, 0.80, 0.82, 0.83, 0.85, 0.90, 0.97)] + [(0.95, 0.50)]
STEP = 16


def full_set_gate(
    right_pos: int, pos: int, right_neg: int, neg: int, t: Thresholds = POLICY
) -> str:
    """The gate's TPR / TNR rule on a whole set (judgekit.gate, with the report's
    Wilson intervals)."""
    bounds = [
        (wilson(right, n), threshold)
        for right, n, threshold in ((right_pos, pos, t.min_tpr), (right_neg, neg, t.min_tnr))
    ]
    if any(high < threshold for (_, high), threshold in bounds):
        return "FAIL"
    if all(low >= threshold for (low, _), threshold in bounds) and min(pos, neg) >= t.min_examples:
        return "PASS"
    return "INCONCLUSIVE"


def one_run(
    rng: np.random.Generator, n_each: int, tpr: float, tnr: float
) -> tuple[str, str | None, int]:
    """(full-set decision, settled decision or None, examples judged) on one simulated set."""
    labels = rng.permutation(np.array([True] * n_each + [False] * n_each))
    right = np.where(labels, rng.random(labels.size) < tpr, rng.random(labels.size) < tnr)
    right_pos, pos = np.cumsum(labels & right), np.cumsum(labels)
    right_neg, neg = np.cumsum(~labels & right), np.cumsum(~labels)
    full = full_set_gate(int(right_pos[-1]), n_each, int(right_neg[-1]), n_each)
    for seen in range(STEP, labels.size + STEP, STEP):
        i = min(seen, labels.size) - 1
        decision = settle(
            (int(right_pos[i]), int(pos[i])),
            (int(right_neg[i]), int(neg[i])),
            (n_each - int(pos[i]), n_each - int(neg[i])),
            POLICY,
        )
        if decision is not None:
            return full, decision, i + 1
    return full, None, labels.size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261130)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    print(
        "| set | judge TPR / TNR | full set: PASS / INCONCL. / FAIL | wrong: full set | wrong: "
        "early stopping | decisions that differ | stopped before the end | examples judged (mean) "
        "| calls saved |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for n_each in SIZES:
        for tpr, tnr in JUDGES:
            good = tpr >= POLICY.min_tpr and tnr >= POLICY.min_tnr
            wrong_word = "FAIL" if good else "PASS"
            runs = [one_run(rng, n_each, tpr, tnr) for _ in range(args.reps)]
            full = {
                d: sum(1 for f, _, _ in runs if f == d) / args.reps
                for d in ("PASS", "INCONCLUSIVE", "FAIL")
            }
            # unsettled: judged to the end, gated as usual
            early = [settled or f for f, settled, _ in runs]
            wrong_full, wrong_early = (
                full[wrong_word],
                sum(1 for d in early if d == wrong_word) / args.reps,
            )
            differ = sum(1 for (f, _, _), d in zip(runs, early, strict=True) if f != d)
            stopped = sum(1 for _, _, n in runs if n < 2 * n_each) / args.reps
            judged = sum(n for _, _, n in runs) / args.reps
            print(
                f"| {n_each} + {n_each} | {tpr:.2f} / {tnr:.2f} | {full['PASS']:.3f} / "
                f"{full['INCONCLUSIVE']:.3f} / {full['FAIL']:.3f} | {wrong_full:.3f} ± "
                f"{se(wrong_full, args.reps)} | {wrong_early:.3f} ± {se(wrong_early, args.reps)} | "
                f"{differ} | {stopped:.3f} | {judged:.0f} of {2 * n_each} | "
                f"{1 - judged / (2 * n_each):.0%} |"
            )
    print(f"\n({args.reps} runs per row, seed {args.seed}, {time.perf_counter() - started:.0f} s)")


def se(share: float, reps: int) -> str:
    return f"{math.sqrt(share * (1 - share) / reps):.3f}"


if __name__ == "__main__":
    main()
