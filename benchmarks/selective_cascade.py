"""Selective judging with a cascade (judgekit.stats.selective.certify_cascade), by simulation.

    python benchmarks/selective_cascade.py              # 2,000 calibrations per row
    python benchmarks/selective_cascade.py --reps 500   # quicker

Two judges: the first judges every example; those below its certified threshold go to the second,
certified on them alone; what the second does not keep is escalated to people. Each stage is
certified at delta / 2 (Bonferroni), so that, with probability at least 1 - delta, the verdicts the
cascade gives agree with people on at least min_agreement of them. The second stage's examples
are chosen by the first stage's threshold, itself chosen on the same labelled set: this checks
that the guarantee survives that dependence.

Each example has a difficulty d ~ U(0, 1); each judge a confidence and a chance of agreeing with
the label that depends on it:

  independent  c1, c2 ~ U(0, 1) independent of d and of each other; agreement 0.5 + 0.49 /
               (1 + exp(-20 (c - 0.35))) for the first, the same curve at 0.5 for the second
  correlated   c1 = clip(1 - d + N(0, 0.1)), c2 = clip(1 - 0.5 d + N(0, 0.1)); agreement
               0.55 + 0.44 c for both: the examples that reach the second judge are the hard ones,
               where it is less sure too
  flat-second  the first as in `independent`; the second right on 0.88 whatever its confidence
               (it must never be certified at 0.9)

Per calibration (n examples, half known-good) the thresholds are certified at min_agreement 0.8
and 0.9, delta 0.1; the agreement the cascade realises at them is computed on 1,000,000 fresh
examples per design (the expected agreement of each covered example, so no sampling noise beyond
the draw of the examples). A calibration is valid when that agreement reaches the target, or when
nothing is certified. The script exits non-zero when the share invalid exceeds delta by more than
2 Monte Carlo standard errors.
"""

from __future__ import annotations

import argparse
import math
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from judgekit.stats.selective import certify_cascade

DESIGNS, NS, TARGETS, DELTA, FRESH = (
    ("independent", "correlated", "flat-second"),
    (100, 300, 1000),
    (0.8, 0.9),
    0.1,
    10**6,
)


def examples(rng, design: str, size: int):
    """(c1, a1, c2, a2): each judge's confidence and chance of agreeing with the label."""
    if design == "correlated":
        d = rng.random(size)
        c1 = np.clip(1 - d + rng.normal(0, 0.1, size), 0, 1)
        c2 = np.clip(1 - 0.5 * d + rng.normal(0, 0.1, size), 0, 1)
        return c1, 0.55 + 0.44 * c1, c2, 0.55 + 0.44 * c2
    c1, c2 = rng.random(size), rng.random(size)
    a1 = 0.5 + 0.49 / (1 + np.exp(-20 * (c1 - 0.35)))
    a2 = (
        np.full(size, 0.88)
        if design == "flat-second"
        else 0.5 + 0.49 / (1 + np.exp(-20 * (c2 - 0.5)))
    )
    return c1, a1, c2, a2


def realised(fresh, t1: float | None, t2: float | None) -> tuple[float, float]:
    """(agreement, coverage) of the cascade at (t1, t2) on the fresh examples."""
    c1, a1, c2, a2 = fresh
    first = c1 >= t1 if t1 is not None else np.zeros(len(c1), dtype=bool)
    second = ~first & (c2 >= t2) if t2 is not None else np.zeros(len(c1), dtype=bool)
    covered = first.sum() + second.sum()
    if not covered:
        return math.nan, 0.0
    return float((a1[first].sum() + a2[second].sum()) / covered), float(covered / len(c1))


def run(design: str, n: int, reps: int, seed: int):
    """Per target: [valid, none certified, second stage certified, sum of coverage]."""
    rng = np.random.default_rng([seed, DESIGNS.index(design), n])
    fresh = examples(np.random.default_rng([seed, 99, DESIGNS.index(design)]), design, FRESH)
    counts = np.zeros((len(TARGETS), 4))
    for _ in range(reps):
        c1, a1, c2, a2 = examples(rng, design, n)
        labels = rng.random(n) < 0.5
        v1 = np.where(rng.random(n) < a1, labels, ~labels)
        v2 = np.where(rng.random(n) < a2, labels, ~labels)
        for j, target in enumerate(TARGETS):
            found = certify_cascade(
                labels.tolist(),
                [(v1.tolist(), c1.tolist()), (v2.tolist(), c2.tolist())],
                target,
                DELTA,
            )
            t1, t2 = (s.threshold for s in found.stages)
            if t1 is None and t2 is None:
                counts[j] += [1, 1, 0, 0]
                continue
            agreement, coverage = realised(fresh, t1, t2)
            counts[j] += [agreement >= target, 0, t2 is not None, coverage]
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--reps", type=int, default=2000, help="calibration sets per design and size"
    )
    parser.add_argument(
        "--jobs", type=int, default=2, help="processes (the figures do not depend on it)"
    )
    parser.add_argument("--seed", type=int, default=20261202)
    args = parser.parse_args()
    started, failed = time.perf_counter(), []
    cells = [(design, n) for design in DESIGNS for n in NS]
    with ProcessPoolExecutor(args.jobs) as pool:
        runs = {
            cell: pool.submit(run, *cell, args.reps, args.seed)
            for cell in sorted(cells, key=lambda c: -c[1])
        }
        print(
            "Cascades of two judges whose realised agreement reaches the target (± MC s.e.); "
            f"nominal ≥ {1 - DELTA:g}. {args.reps} calibration sets per design and n\n"
        )
        print(
            "| design | n | target | valid | none certified | second judge certified "
            "| mean coverage |"
        )
        print("|---|---|---|---|---|---|---|")
        for design, n in cells:
            for target, (valid, none, second, cover) in zip(
                TARGETS, runs[(design, n)].result(), strict=True
            ):
                p = valid / args.reps
                q = min(max(p, 1 / args.reps), 1 - 1 / args.reps)
                se = math.sqrt(q * (1 - q) / args.reps)
                print(
                    f"| {design} | {n} | {target} | {p:.3f} ± {se:.3f} | {none / args.reps:.3f} | "
                    f"{second / args.reps:.3f} | {cover / args.reps:.3f} |"
                )
                if (1 - p) - DELTA > 2 * se:
                    failed.append(f"{design} n={n} target={target}: {1 - p:.3f} failed")
    print(f"\n(seed {args.seed}; {time.perf_counter() - started:.0f} s)")
    if failed:
        raise SystemExit("over the nominal level: " + "; ".join(failed))


if __name__ == "__main__":
    main()
