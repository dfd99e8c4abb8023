"""Early stopping (`calibrate --stop-early`) under both rules against the full-set gate, on the
same simulated data: how often each decides wrong against the true rates, and how many examples
each judges.

    python benchmarks/early_stopping.py              # 2,000 runs per row

Each run draws a set of N known-good and N known-bad examples (N = 25, 50, 200, 1000) and a judge
right on each known-good example with probability TPR and on each known-bad one with TNR,
independently; the examples are judged in random order in batches of 16 (the runner's batch at
the default concurrency), with the default policy (min_tpr = min_tnr = 0.8, min_examples 20).
Where each rule stops is `judgekit.stats.sequential.stopped_at`, the function the gate derives a
stop with (the runner stops by the same `next_look` and `decide`).

The full-set gate decides on all 2N verdicts, by the gate's rule: Wilson 95% intervals, PASS when
both lower bounds are at or above 0.8 (and 20 examples of each class), FAIL when an upper bound is
below, else INCONCLUSIVE. A stopping rule's decision is the one it stopped with, or, when it
judged the whole set undecided, the gate's on the whole set at the level the gate decides that
run at (for the sequential rule, `last_look`: a little stricter than 95%). The exact rule stops
only once the full-set decision cannot change; the sequential rule stops at its interim looks (a
quarter, half and three quarters of the set) when the Wilson bounds at z = 3 of the verdicts so
far decide. A decision is wrong when it says PASS while a true rate is below 0.8, or FAIL while
both are at or above.
"""

from __future__ import annotations

import argparse
import math
import time
from statistics import NormalDist

import numpy as np

from judgekit.inputs.policy import Thresholds
from judgekit.stats.metrics import CONFIDENCE, wilson
from judgekit.stats.sequential import RULES, last_look, stopped_at

POLICY = Thresholds()  # min_tpr = min_tnr = 0.8, min_examples 20
SIZES = (25, 50, 200, 1000)
JUDGES = [(r, r) for r in (0.75, 0.78, 0.80, 0.82, 0.83, 0.85, 0.90, 0.97)] + [(0.95, 0.50)]
STEP = 16


def full_set_gate(
    right_pos: int, pos: int, right_neg: int, neg: int, confidence: float = CONFIDENCE
) -> str:
    """The gate's TPR / TNR rule on a whole set (judgekit.gate, with the report's Wilson
    intervals; a run the sequential rule took to the end is decided at its last look's level)."""
    t = POLICY
    bounds = [
        (wilson(right, n, confidence), threshold)
        for right, n, threshold in ((right_pos, pos, t.min_tpr), (right_neg, neg, t.min_tnr))
    ]
    if any(high < threshold for (_, high), threshold in bounds):
        return "FAIL"
    if all(low >= threshold for (low, _), threshold in bounds) and min(pos, neg) >= t.min_examples:
        return "PASS"
    return "INCONCLUSIVE"


def one_run(rng: np.random.Generator, n_each: int, tpr: float, tnr: float) -> list[tuple[str, int]]:
    """(decision, examples judged) on one simulated set: the full-set gate's, the exact rule's and
    the sequential rule's."""
    labels = rng.permutation(np.array([True] * n_each + [False] * n_each))
    right = np.where(labels, rng.random(labels.size) < tpr, rng.random(labels.size) < tnr)
    verdicts = [bool(v) for v in np.where(right, labels, ~labels)]
    as_list = [bool(y) for y in labels]
    counts = (int((labels & right).sum()), n_each, int((~labels & right).sum()), n_each)
    runs = [(full_set_gate(*counts), labels.size)]
    for rule in RULES[::-1]:  # exact, sequential
        at, decided = stopped_at(as_list, verdicts, STEP, POLICY, rule)
        if decided is None:  # judged to the end: the gate decides, the sequential rule's stricter
            level = last_look(as_list, verdicts, POLICY) if rule == "sequential" else CONFIDENCE
            decided = full_set_gate(*counts, level)
        runs.append((decided, at))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261204)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    print(
        "| set | judge TPR / TNR | full set: PASS / INCONCL. / FAIL | wrong: full set | wrong: "
        "exact | wrong: sequential | judged (mean): exact | judged (mean): sequential |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for n_each in SIZES:
        for tpr, tnr in JUDGES:
            good = tpr >= POLICY.min_tpr and tnr >= POLICY.min_tnr
            wrong_word = "FAIL" if good else "PASS"
            runs = [one_run(rng, n_each, tpr, tnr) for _ in range(args.reps)]
            full = {
                d: sum(1 for r in runs if r[0][0] == d) / args.reps
                for d in ("PASS", "INCONCLUSIVE", "FAIL")
            }
            wrong = [sum(1 for r in runs if r[k][0] == wrong_word) / args.reps for k in range(3)]
            judged = [sum(r[k][1] for r in runs) / args.reps / (2 * n_each) for k in (1, 2)]
            print(
                f"| {n_each} + {n_each} | {tpr:.2f} / {tnr:.2f} | {full['PASS']:.3f} / "
                f"{full['INCONCLUSIVE']:.3f} / {full['FAIL']:.3f} | "
                + " | ".join(f"{w:.3f} ± {se(w, args.reps)}" for w in wrong)
                + " | "
                + " | ".join(f"{j:.0%}" for j in judged)
                + " |"
            )
    print(f"\n({args.reps} runs per row, seed {args.seed}, {time.perf_counter() - started:.0f} s)")
    exact_per_class()


def exact_per_class() -> None:
    """Each class's chance of a PASS (true rate below the threshold) or a FAIL (at or above) under
    the sequential rule, interim looks and last look together, against the full-set gate's: by
    exact binomial sums over every path (not simulated), for one class of N decided examples
    looked at after N/4, N/2 and 3N/4 (the looks before min_examples cannot decide)."""
    print(
        "\n| examples of the class | last look's z | true rate | chance of the wrong decision: "
        "full-set gate | sequential rule |"
    )
    print("|---|---|---|---|---|")
    theta = POLICY.min_tpr
    for total in SIZES:
        sizes = [
            n
            for n in (math.ceil(total * share) for share in (0.25, 0.5, 0.75))
            if n >= POLICY.min_examples
        ]
        labels = [True] * total
        z = NormalDist().inv_cdf((1 + last_look(labels, labels, POLICY)) / 2)
        worst = {}
        for p in np.round(np.arange(0.60, 1.0, 0.005), 3):
            side = 1 if p < theta else -1  # a PASS is wrong below the threshold, a FAIL above
            worst[p] = chances(sizes, total, theta, float(p), z, side)
        for p in (0.78, 0.795, 0.8, 0.82, 0.85):
            gate, rule = worst[p]
            print(f"| {total} | {z:.3f} | {p:.3f} | {gate:.5f} | {rule:.5f} |")
        excess = max(worst, key=lambda p: worst[p][1] - worst[p][0])
        gate, rule = worst[excess]
        print(f"| {total} | {z:.3f} | {excess:.3f} (largest excess) | {gate:.6f} | {rule:.6f} |")


def chances(
    sizes: list[int], total: int, theta: float, p: float, z_last: float, side: int
) -> tuple[float, float]:
    """(full-set gate, sequential rule): the chance of a PASS (side 1) or a FAIL (side -1) of one
    class at true rate p."""
    from scipy.stats import binom

    sd = math.sqrt(theta * (1 - theta))

    def beyond(n: int, z: float) -> np.ndarray:
        score = (np.arange(n + 1) / n - theta) * math.sqrt(n) / sd
        return score >= z if side == 1 else score < -z

    crossed, mass, at = 0.0, np.array([1.0]), 0
    for n in sizes:
        mass = np.convolve(mass, binom.pmf(np.arange(n - at + 1), n - at, p))
        at = n
        crossed += float(mass[beyond(n, 3.0)].sum())
        mass = np.where(beyond(n, 3.0), 0.0, mass)
    last = np.convolve(mass, binom.pmf(np.arange(total - at + 1), total - at, p))
    gate = float(binom.pmf(np.arange(total + 1), total, p)[beyond(total, 1.959963984540054)].sum())
    return gate, crossed + float(last[beyond(total, z_last)].sum())


def se(share: float, reps: int) -> str:
    return f"{math.sqrt(share * (1 - share) / reps):.3f}"


if __name__ == "__main__":
    main()
