"""Drift decisions, by simulation: how often `judgekit drift` alarms when something changed, and
when nothing did. (Monitoring alarms: benchmarks/monitor_alarms.py, summed exactly.)

    python benchmarks/drift.py              # 2,000 simulated pairs of runs per row

1. `judgekit drift` on two runs of the same judge fingerprint over 200 labelled examples
   (half pass, judge TPR 0.90 / TNR 0.85), default policy (alpha 0.05, max_run_flip_rate 0.02):
   a silent change on 10% / 5% of the examples (their verdicts flipped), and nothing changed but
   the judge's own noise: each run's verdict of an example departs from the judge's usual one
   with probability q, independently in each run, q = 0 or q such that an example flips between
   the two runs with probability 2q(1 - q) = 0.02, the most the policy allows.
2. `judgekit drift` on two runs of *different* fingerprints (a model swap) over 100 labelled
   examples (half pass), each run right with its own probability, errors independent between
   the runs: equal accuracy (agreement did not change: every DRIFT is a false alarm), and
   kappa 0.84 -> 0.59 (accuracy 0.92 -> 0.795, LLMBar's GPT-4 -> ChatGPT). Beside the simulated
   share, the exact chance of DRIFT summed over every outcome, for the rule in use (one-sided
   exact McNemar at alpha) and for the earlier one (two-sided at alpha, and worse).
"""

from __future__ import annotations

import argparse
import math
import time
from datetime import UTC, datetime

import numpy as np

from judgekit.inputs.settings import DriftPolicy
from judgekit.watch.drift import compare, mcnemar_exact, mcnemar_worse
from judgekit.watch.history import HistoryRun


def run(run_id: int, model: str = "m") -> HistoryRun:
    return HistoryRun(
        run_id,
        "c",
        datetime(2026, 11, run_id, tzinfo=UTC),
        "calibrate",
        "f",
        model,
        "p",
        {},
        "s",
        None,
        "live",
        200,
        0,
        {},
    )


def outcomes(labels, verdicts):
    return {
        f"e{i}": (bool(label), bool(verdict))
        for i, (label, verdict) in enumerate(zip(labels, verdicts, strict=True))
    }


def share(hits: int, reps: int) -> str:
    p = hits / reps
    return f"{p:.3f} ± {math.sqrt(p * (1 - p) / reps):.3f}"


def exact_drift(first: float, second: float, n: int, rule) -> float:
    """The chance that `rule(right->wrong, wrong->right)` holds, summed over every outcome of n
    examples whose errors are independent between the runs (a trinomial)."""
    from scipy.stats import multinomial

    b_rate, c_rate = first * (1 - second), (1 - first) * second
    return sum(
        multinomial.pmf([b, c, n - b - c], n, [b_rate, c_rate, 1 - b_rate - c_rate])
        for b in range(n + 1)
        for c in range(n + 1 - b)
        if rule(b, c)
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261130)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    policy = DriftPolicy()
    print("| judge between the two runs | DRIFT share (± s.e.) |\n|---|---|")
    for name, changed, noise in (
        ("silently changed on 10% of examples", 20, 0.0),
        ("silently changed on 5% of examples", 10, 0.0),
        ("nothing changed, deterministic judge", 0, 0.0),
        ("nothing changed, judge flips 2% between runs", 0, policy.max_run_flip_rate),
    ):
        hits = 0
        for _ in range(args.reps):
            labels = rng.random(200) < 0.5
            usual = np.where(labels, rng.random(200) < 0.90, rng.random(200) >= 0.85)
            q = (1 - math.sqrt(1 - 2 * noise)) / 2  # 2q(1 - q) = noise
            verdicts = np.where(rng.random(200) < q, ~usual, usual)
            after = np.where(rng.random(200) < q, ~usual, usual)
            touched = rng.choice(200, changed, replace=False)
            after[touched] = ~after[touched]
            hits += (
                compare(
                    run(1), run(2), outcomes(labels, verdicts), outcomes(labels, after), policy
                ).status
                == "DRIFT"
            )
        print(f"| {name} | {share(hits, args.reps)} |")

    print(
        "\n| model swapped, accuracy before -> after (100 examples) | DRIFT share (± s.e.) | "
        "exact, one-sided at alpha (in use) | exact, two-sided at alpha and worse (before) |\n"
        "|---|---|---|---|"
    )
    for name, first, second in (
        ("0.92 -> 0.92 (kappa 0.84, unchanged)", 0.92, 0.92),
        ("0.80 -> 0.80 (unchanged)", 0.80, 0.80),
        ("0.50 -> 0.50 (unchanged, chance)", 0.50, 0.50),
        ("0.92 -> 0.795 (kappa 0.84 -> 0.59)", 0.92, 0.795),
    ):
        hits = 0
        for _ in range(args.reps):
            labels = rng.random(100) < 0.5
            before = np.where(rng.random(100) < first, labels, ~labels)
            after = np.where(rng.random(100) < second, labels, ~labels)
            hits += (
                compare(
                    run(1),
                    run(2, model="other"),
                    outcomes(labels, before),
                    outcomes(labels, after),
                    policy,
                ).status
                == "DRIFT"
            )
        now = exact_drift(first, second, 100, lambda b, c: mcnemar_worse(b, c) < policy.alpha)
        then = exact_drift(
            first, second, 100, lambda b, c: b > c and mcnemar_exact(b, c) < policy.alpha
        )
        print(f"| {name} | {share(hits, args.reps)} | {now:.4f} | {then:.4f} |")

    print(f"\n({args.reps} per row, seed {args.seed}, {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
