"""`judgekit drift` on robustness probes: how often it calls a judge whose probes buy verdicts as
often as before DRIFT (a false alarm), and how often it sees one that became easier to fool.

    python benchmarks/probe_drift.py             # 20,000 pairs of runs per row

Two runs of one judge, each with the four default probes in both directions (8 probe counts);
each probe tries `tried` rewrites per direction and flips each with the judge's flip rate, the
runs independent. The test is `judgekit.watch.drift._robustness`: a one-sided exact Fisher test per
probe and direction, Bonferroni over the eight, at the share of drift's alpha (0.05) it gets when
it is one of two tests (0.025, an unchanged judge's flips and agreement taking the other share: the
level it gets beside one other test). A false alarm is DRIFT with the flip rate unchanged; the
power row has one probe's flip rate rise in one direction.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from judgekit.watch.drift import _robustness

LEVEL = 0.05 / 2
PROBES = [(name, toward) for name in ("a", "b", "c", "d") for toward in ("PASS", "FAIL")]


def alarms(rng: np.random.Generator, tried: int, before: float, after: float, reps: int) -> float:
    """Share of pairs of runs called DRIFT: every probe at `before`, then the first at `after`
    and the rest at `before` again."""
    hits = 0
    for _ in range(reps):
        first = rng.binomial(tried, before, len(PROBES))
        then = rng.binomial(tried, [after, *[before] * (len(PROBES) - 1)])
        counts = {
            key: ((int(f), tried), (int(t), tried))
            for key, f, t in zip(PROBES, first, then, strict=True)
        }
        hits += _robustness(counts, LEVEL, [])
    return hits / reps


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=20261204)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    print("| rewrites per probe and direction | flip rate before | after | called DRIFT | ± |")
    print("|---|---|---|---|---|")
    worst = 0.0
    for tried in (20, 50, 200):
        for before, after in ((0.0, 0.0), (0.05, 0.05), (0.2, 0.2), (0.5, 0.5), (0.05, 0.3)):
            share = alarms(rng, tried, before, after, args.reps)
            if before == after:
                worst = max(worst, share)
            se = (share * (1 - share) / args.reps) ** 0.5
            print(f"| {tried} | {before:.2f} | {after:.2f} | {share:.4f} | {se:.4f} |")
    print(
        f"\nlargest false-alarm rate {worst:.4f} against the level {LEVEL} "
        f"({args.reps} pairs per row, seed {args.seed}, {time.perf_counter() - started:.0f} s)"
    )
    if worst > LEVEL + 3 * (LEVEL * (1 - LEVEL) / args.reps) ** 0.5:
        raise SystemExit("a false-alarm rate is over the level")


if __name__ == "__main__":
    main()
