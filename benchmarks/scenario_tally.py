"""How often a scenario is failed "only through the judges' errors" when it is not, by simulation.

    python benchmarks/scenario_tally.py              # 4,000 scenarios per design
    python benchmarks/scenario_tally.py --reps 1000  # quicker

A scenario of `runs` runs passes when at least `min_passes` = ceil(threshold * runs) of them were
judged passing; judgekit.gate.counted fails it anyway when the count is corrected for the judges'
measured errors and the corrected rate's 95% upper bound
(judgekit.stats.scenarios.certified_upper) lies below the threshold. The error to
bound: failing, this way, a scenario whose true run pass rate is at the threshold (the worst case:
a higher true rate is flagged less often). Nominal level 2.5% (the upper end of a 95% interval).

A  one check per run (the Rogan-Gladen Wald interval of corrected_pass_rate, tried first, flagged
   3.05% at 2,000 reps, s.e. 0.38%, at threshold 0.8, 1,000 runs, TPR 0.9, TNR 0.3, 400 + 400
   calibrated: too often, so the decision uses the exact bound here too). Grid:
   threshold 0.8 / 0.9, runs 5-1000, judge TPR 0.90 / 0.99, TNR 0.3 / 0.6 / 0.9, calibrated on 30,
   100 or 400 examples of each class.
B  three checks per run (three criteria; TPR / TNR 0.97 / 0.9, 0.95 / 0.8, 0.99 / 0.6, or lenient
   ones, 0.99 / 0.3, 0.99 / 0.4, 0.99 / 0.3). A truly failing run has one to three truly failing
   checks; the judges' errors within a run are independent, as alike as possible (one uniform draw
   decides every check's error), or opposed.

For each design the table gives the worst false-flag rate over its grid with its Monte Carlo
standard error, and the share of scenarios flagged when the true rate is 0.15 below the
threshold and the count still met it (the power, where there is any).
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
from dataclasses import dataclass

import numpy as np

from judgekit.gate.counted import JudgeCounts, correction, only_through_judge_error


def _flag(passes, runs, min_passes, per_run, judges):
    """judgekit's decision on one scenario's count (judgekit.gate.counted.decide does the same)."""
    _, interval, _ = correction(passes, runs, per_run, judges)
    return only_through_judge_error(passes, min_passes, runs, interval)


@dataclass(frozen=True)
class Scenario:
    """A scenario's shape: how many runs, the pass-rate threshold, and the runs' true pass rate."""

    runs: int
    threshold: float
    rate: float


def one_check(rng, reps, scenario, tpr, tnr, cal):
    """Share of scenarios flagged, and share whose count met the threshold."""
    runs, threshold, rate = scenario.runs, scenario.threshold, scenario.rate
    min_passes = math.ceil(threshold * runs - 1e-9)
    judged_pass = tpr * rate + (1 - tnr) * (1 - rate)
    passes = rng.binomial(runs, judged_pass, reps)
    tp, tn = rng.binomial(cal, tpr, reps), rng.binomial(cal, tnr, reps)
    flagged = sum(
        _flag(int(k), runs, min_passes, {"c": 1}, {"c": JudgeCounts(int(a), cal, int(b), cal)})
        for k, a, b in zip(passes, tp, tn, strict=True)
        if k >= min_passes
    )
    return flagged / reps, float(np.mean(passes >= min_passes))


# Three criteria's TPR and TNR: judges good enough to pass a gate, and lenient ones.
JUDGE_SETS = {
    "mixed": [(0.97, 0.9), (0.95, 0.8), (0.99, 0.6)],
    "lenient": [(0.99, 0.3), (0.99, 0.4), (0.99, 0.3)],
}


def three_checks(rng, reps, scenario, cal, coupling, judges="mixed"):
    """As one_check, with three checks (three criteria) in every run."""
    runs, threshold, rate = scenario.runs, scenario.threshold, scenario.rate
    min_passes = math.ceil(threshold * runs - 1e-9)
    passing = rng.random((reps, runs)) < rate
    # A truly failing run has one to three truly failing checks.
    failing = np.zeros((reps, runs, 3), dtype=bool)
    how_many = rng.integers(1, 4, (reps, runs))
    order = np.argsort(rng.random((reps, runs, 3)), axis=2)
    for k in range(3):
        failing |= (order == k) & (how_many[..., None] > k)
    failing &= ~passing[..., None]
    u = rng.random((reps, runs, 1))
    draws = {
        "independent": rng.random((reps, runs, 3)),
        "alike": np.repeat(u, 3, axis=2),
        "opposed": np.concatenate([u, 1 - u, u], axis=2),
    }[coupling]
    tpr = np.array([t for t, _ in JUDGE_SETS[judges]])
    tnr = np.array([s for _, s in JUDGE_SETS[judges]])
    # a failing check passed by mistake, or a passing one kept
    judged = np.where(failing, draws >= tnr, draws < tpr)
    passes = judged.all(axis=2).sum(axis=1)
    flagged = 0
    for k in passes[passes >= min_passes]:
        counts = {
            f"c{c}": JudgeCounts(int(rng.binomial(cal, t)), cal, int(rng.binomial(cal, s)), cal)
            for c, (t, s) in enumerate(JUDGE_SETS[judges])
        }
        flagged += _flag(int(k), runs, min_passes, {c: 1 for c in counts}, counts)
    return flagged / reps, float(np.mean(passes >= min_passes))


def design_a(reps, rng):
    worst, rows = (0.0, None), []
    for threshold, runs, tpr, tnr, cal in itertools.product(
        [0.8, 0.9], [5, 20, 100, 400, 1000], [0.90, 0.99], [0.3, 0.6, 0.9], [30, 100, 400]
    ):
        flagged, _ = one_check(rng, reps, Scenario(runs, threshold, threshold), tpr, tnr, cal)
        if flagged >= worst[0]:
            worst = (flagged, (threshold, runs, tpr, tnr, cal))
        if runs == 400 and cal == 400 and threshold == 0.8:
            rows.append(
                (
                    tpr,
                    tnr,
                    *one_check(
                        rng, reps, Scenario(runs, threshold, threshold - 0.15), tpr, tnr, cal
                    ),
                )
            )
    return worst, rows


def design_b(reps, rng):
    worst, rows = (0.0, None), []
    for threshold, runs, cal, coupling, judges in itertools.product(
        [0.8, 0.9],
        [5, 20, 100, 400],
        [30, 100, 400],
        ["independent", "alike", "opposed"],
        JUDGE_SETS,
    ):
        flagged, _ = three_checks(
            rng, reps, Scenario(runs, threshold, threshold), cal, coupling, judges
        )
        if flagged >= worst[0]:
            worst = (flagged, (threshold, runs, cal, coupling, judges))
        if runs == 400 and cal == 400 and threshold == 0.8 and judges == "lenient":
            rows.append(
                (
                    coupling,
                    judges,
                    *three_checks(
                        rng,
                        reps,
                        Scenario(runs, threshold, threshold - 0.15),
                        cal,
                        coupling,
                        judges,
                    ),
                )
            )
    return worst, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    failed = False
    for label, design in (("A one check per run", design_a), ("B three checks per run", design_b)):
        (rate, where), power = design(args.reps, rng)
        se = math.sqrt(max(rate, 1 / args.reps) * (1 - max(rate, 1 / args.reps)) / args.reps)
        print(
            f"{label}: worst false-flag rate {rate:.4f} (MC s.e. {se:.4f}) at {where}; "
            "nominal 0.025"
        )
        for *cell, flagged, met in power:
            print(
                f"  true rate 0.65 against 0.80 (400 runs, 400 + 400 calibrated), {cell}: count "
                f"met {met:.3f}, flagged {flagged:.3f}"
            )
        failed |= rate > 0.025 + 2 * se
    print(f"({time.perf_counter() - started:.0f} s)")
    if failed:
        raise SystemExit("a false-flag rate is above its nominal level")


if __name__ == "__main__":
    main()
