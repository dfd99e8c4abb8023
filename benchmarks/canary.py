"""`judgekit recheck`'s canary, by simulation: the default size (judgekit.watch.canary) finds a drop
of 0.2 in TPR or TNR at least 80% of the time, the old default of 10 does not, and a judge that
did not drift (only its own run-to-run noise, at or under `max_run_flip_rate`) is called DRIFT at
most alpha of the time.

    python benchmarks/canary.py

Each run draws the re-check's verdicts on a canary (half known-good, half known-bad): every
example flips with the judge's noise, and with a drop, each right verdict of the dropping class
turns wrong with chance drop / rate. The decision is `compare`'s for an unchanged judge (the flip
test against max_run_flip_rate and exact McNemar on agreement, each at alpha / 2). 20,000 runs per
row, seeded.
"""

from __future__ import annotations

import numpy as np

from judgekit.stats.paired import mcnemar_exact
from judgekit.watch.canary import canary_size, power
from judgekit.watch.drift import flip_excess

ALPHA, FLIPS, RUNS = 0.05, 0.02, 20_000


def drift_found(rng, size: int, rate: float, drop: float, noise: float) -> float:
    """The share of runs called DRIFT."""
    half = size // 2
    found = 0
    for _ in range(RUNS):
        right = rng.random(half) < rate  # the dropping class, before
        other = np.ones(size - half, dtype=bool)
        turn = right & (rng.random(half) < (drop / rate if rate else 0))
        noisy = rng.random(size) < noise
        before = np.concatenate([right, other])
        after = before.copy()
        after[:half] ^= turn
        after ^= noisy
        flips = int((before != after).sum())
        r2w, w2r = int((before & ~after).sum()), int((~before & after).sum())
        if flip_excess(flips, size, FLIPS) < ALPHA / 2 or mcnemar_exact(r2w, w2r) < ALPHA / 2:
            found += 1
    return found / RUNS


def main() -> None:
    rng = np.random.default_rng(20261202)
    default = canary_size(1.0, 1.0, ALPHA, FLIPS)
    at_90 = canary_size(0.9, 0.9, ALPHA, FLIPS)
    print(f"default canary at TPR = TNR = 1.00: {default}; at 0.90: {at_90}")
    print("| canary | rate | drop | judge's own noise | exact power (model) | called DRIFT |")
    print("|---|---|---|---|---|---|")
    for size, rate, drop, noise in [
        (10, 1.0, 0.4, 0.0),
        (10, 1.0, 0.2, 0.0),
        (default, 1.0, 0.2, 0.0),
        (default, 1.0, 0.2, 0.01),
        (default, 0.9, 0.2, 0.0),
        (default, 1.0, 0.0, 0.01),
        (default, 1.0, 0.0, 0.02),
        (10, 1.0, 0.0, 0.02),
    ]:
        exact = power(size, rate, drop, ALPHA, FLIPS) if drop else float("nan")
        share = drift_found(rng, size, rate, drop, noise)
        print(f"| {size} | {rate} | {drop} | {noise} | {exact:.3f} | {share:.3f} |")


if __name__ == "__main__":
    main()
