"""`judgekit monitor`'s alarm rates, summed exactly over every outcome (no random draws): how often
a window alerts when its pass rate dropped by exactly `max_drop` (the most the policy tolerates:
every alert is a false alarm, so this is the test's size) and when it dropped by more (power).

    python benchmarks/monitor_alarms.py                  # windows of 30 and 200 (about a minute)
    python benchmarks/monitor_alarms.py --windows 1000   # three baseline rates (about 7 minutes)

One window of n verdicts against a baseline of 7 x n (default policy: max_drop 0.05, alpha 0.01,
min_samples 30); window and baseline verdicts independent, each a pass with its rate. For each
baseline count the window counts that alert are found with `judgekit.droptest.drop_test`, the
function `watch` decides with; the alarm rate is the sum of the probabilities of the outcomes that
alert. Outcomes of probability below 1e-12 (at most 1e-9 in all) are left out. "Score test" is
the Farrington-Manning test alone (`drop_p_value < alpha`), as monitor decided before.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.stats import binom

from judgekit.inputs.settings import MonitorPolicy
from judgekit.stats.droptest import drop_test, score_z

POLICY = MonitorPolicy()
BASELINES = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98)
DROPS = (0.05, 0.10, 0.15)


def alerts(n1: int, n0: int, x0: int, x1: np.ndarray, every: bool) -> tuple[np.ndarray, np.ndarray]:
    """For one baseline count: which of the window counts `x1` alert, by the test in use and by
    the score test alone. For a fixed baseline, `drop_test` decides on the score statistic z alone
    and alerts on every z below one that alerts (the outcomes at least as extreme as z only grow
    with z, so does every bound of the exact p-value), so the last z that alerts is found by
    bisection; `every` asks `drop_test` about each outcome instead (the tables agree)."""
    from statistics import NormalDist

    z = score_z(x1, n1, x0, n0, POLICY.max_drop)
    score = np.array([NormalDist().cdf(v) for v in z]) < POLICY.alpha

    def alert(i: int) -> bool:
        return drop_test(int(x1[i]), n1, x0, n0, POLICY.max_drop, POLICY.alpha)[1]

    if every:
        return np.array([alert(i) for i in range(len(x1))]), score
    order = np.argsort(z, kind="stable")
    low, high = 0, len(order)  # order[:low] alert, order[high:] do not
    while low < high:
        middle = (low + high) // 2
        low, high = (middle + 1, high) if alert(order[middle]) else (low, middle)
    exact = np.zeros(len(x1), dtype=bool)
    exact[order[:low]] = True
    return exact, score


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--windows", type=int, nargs="+", default=[30, 200])
    parser.add_argument(
        "--every", action="store_true", help="ask drop_test about every outcome (slow)"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    for n1 in args.windows:
        n0 = 7 * n1
        print(f"\nwindow {n1}, baseline {n0}: alarm rate, test in use (score test alone)")
        print(
            "| baseline rate | drop 0.05 (tolerated: size) | drop 0.10 | drop 0.15 |\n"
            "|---|---|---|---|"
        )
        # Window counts likely under some rate asked: the others (each below 1e-12) are left out.
        x1 = np.flatnonzero(
            np.max(
                [binom.pmf(np.arange(n1 + 1), n1, p0 - drop) for p0 in BASELINES for drop in DROPS],
                axis=0,
            )
            >= 1e-12
        )
        table: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for p0 in BASELINES if n1 < 1000 else (0.5, 0.9, 0.98):  # 1000: a few rates, for time
            x0s = np.flatnonzero(binom.pmf(np.arange(n0 + 1), n0, p0) >= 1e-12)
            cells = []
            for drop in DROPS:
                window = binom.pmf(x1, n1, p0 - drop)
                exact = score = 0.0
                for x0 in x0s:
                    if x0 not in table:
                        table[x0] = alerts(n1, n0, int(x0), x1, args.every)
                    weight = binom.pmf(x0, n0, p0)
                    exact += weight * window[table[x0][0]].sum()
                    score += weight * window[table[x0][1]].sum()
                cells.append(f"{exact:.4f} ({score:.4f})")
            print(f"| {p0:.2f} | " + " | ".join(cells) + " |", flush=True)
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
