"""Pairwise judges' statistics (judgekit.stats.pairwise): the position-preference test and the
consistency interval at their nominal error rates, simulated; and every LLMBar judge set-up's
figures.

    python benchmarks/pairwise.py               # 20,000 judges per row
    python benchmarks/pairwise.py --reps 2000   # quicker

A. A simulated judge meets n labelled pairs. A share `hard` of the pairs it cannot read: on those
it answers by position in each order, independently (the first position with chance `pi`); on
the others it picks one reply by content, the right one with chance 0.85, the same in both
orders. So a hard pair is consistent with chance 2 pi (1 - pi), and of the inconsistent pairs
whose two answers name a position the first won both with chance pi^2 / (pi^2 + (1 - pi)^2); the
true consistency is (1 - hard) + hard 2 pi (1 - pi). Measured: how often the exact binomial test
of "no position preference" rejects at 0.05 (its size where pi = 0.5, its power elsewhere), how
often the lower bound of the consistency's exact 95% interval lies above the true consistency (a
gate's `min_consistency` on that bound, set at the true value, would pass it: at most 2.5%), how
often the interval holds it, and how often the upper bound of the exact interval of the share of
pairs the first position won in both orders (true: hard pi^2) lies below the truth (the gate's
`max_position_bias`, set at the true share, would pass the judge: at most 2.5%), simulated and,
as that count is binomial here, exactly. The script exits non-zero when a size exceeds 0.05, or
the lower bound's error 0.025, by more than 2 Monte Carlo standard errors, or the upper bound's
exact error exceeds 0.025.

B. LLMBar (../shared/datasets/llmbar/verdicts.csv): each judge set-up on LLMBar/Natural and on the
four Adversarial sets pooled, both orders as recorded: accuracy on the consistent pairs,
consistency, and the position preference. Skipped, with a message, when ../shared is absent.
"""

from __future__ import annotations

import argparse
import csv
import math
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from judgekit.stats.metrics import clopper_pearson
from judgekit.stats.pairwise import figures

LLMBAR = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "llmbar" / "verdicts.csv"
NS, HARD, PIS = (30, 100, 300), (0.1, 0.3, 0.6), (0.5, 0.6, 0.75)


def simulate(rng, n: int, hard: float, pi: float, reps: int):
    """Per judge: the labels and the answers in both orders, as judgekit.stats.pairwise reads."""
    labels = np.where(rng.random((reps, n)) < 0.5, "a", "b")
    is_hard = rng.random((reps, n)) < hard
    right = rng.random((reps, n)) < 0.85
    pick = np.where(right, labels, np.where(labels == "a", "b", "a"))  # by content, both orders
    first_1, first_2 = rng.random((reps, n)) < pi, rng.random((reps, n)) < pi  # by position
    a_first = np.where(
        is_hard, np.where(first_1, "first", "second"), np.where(pick == "a", "first", "second")
    )
    b_first = np.where(
        is_hard, np.where(first_2, "first", "second"), np.where(pick == "b", "first", "second")
    )
    return labels, a_first, b_first


def below_exactly(n: int, share: float) -> float:
    """The exact chance that the exact interval's upper bound lies below `share`: the count of
    pairs the first position won in both orders is binomial (n, share) in this model."""
    from scipy.stats import binom

    return float(
        sum(binom.pmf(k, n, share) for k in range(n + 1) if clopper_pearson(k, n)[1] < share)
    )


def run(reps: int, seed: int) -> list[str]:
    failed = []
    print(
        "| n | hard | pi | true consistency | rejects 'no preference' at 0.05 | consistency's "
        "lower bound above it | interval holds it | first won both: true | its upper bound "
        "below it | exactly |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in NS:
        for hard in HARD:
            for pi in PIS:
                rng = np.random.default_rng([seed, n, int(100 * hard), int(100 * pi)])
                labels, a_first, b_first = simulate(rng, n, hard, pi, reps)
                truth = (1 - hard) + hard * 2 * pi * (1 - pi)
                # the share of pairs the first position won in both orders (max_position_bias)
                first_truth = hard * pi * pi
                rejected = above = covered = below = 0
                for i in range(reps):
                    f = figures(list(labels[i]), list(a_first[i]), list(b_first[i]))
                    rejected += f.position_p <= 0.05
                    low, high = f.consistency_interval
                    above += low > truth
                    covered += low <= truth <= high
                    below += f.first_decided_interval[1] < first_truth
                size, over, coverage = rejected / reps, above / reps, covered / reps
                under = below / reps
                se_size, se_over, se_under = (
                    math.sqrt(max(x, 1 / reps) * (1 - x) / reps) for x in (size, over, under)
                )
                exact = below_exactly(n, first_truth)
                print(
                    f"| {n} | {hard} | {pi} | {truth:.3f} | {size:.4f} ± {se_size:.4f} | "
                    f"{over:.4f} ± {se_over:.4f} | {coverage:.4f} | {first_truth:.3f} | "
                    f"{under:.4f} ± {se_under:.4f} | {exact:.4f} |",
                    flush=True,
                )
                if exact > 0.025 + 1e-12:
                    failed.append(f"n={n} hard={hard} pi={pi}: upper bound below {exact:.4f}")
                if pi == 0.5 and size - 0.05 > 2 * se_size:
                    failed.append(f"n={n} hard={hard}: size {size:.4f}")
                if over - 0.025 > 2 * se_over:
                    failed.append(f"n={n} hard={hard} pi={pi}: lower bound above {over:.4f}")
    return failed


def llmbar() -> None:
    if not LLMBAR.is_file():
        print(f"\nB skipped: {LLMBAR} is absent (the shared data sets sit beside a clone)")
        return
    first_when_ab = {"1": "first", "2": "second", "": None}
    first_when_ba = {"1": "second", "2": "first", "": None}
    setups: dict[tuple[str, str, str], tuple[list, list, list]] = defaultdict(lambda: ([], [], []))
    with LLMBAR.open(newline="") as handle:
        for row in csv.DictReader(handle):
            group = row["set"]
            if group.startswith("LLMBar/Adversarial"):
                group = "LLMBar/Adversarial (4 sets)"
            elif group != "LLMBar/Natural":
                continue
            labels, a_first, b_first = setups[(group, row["llm"], row["strategy"])]
            labels.append({"1": "a", "2": "b"}[row["label"]])
            a_first.append(first_when_ab[row["winner_order_AB"]])
            b_first.append(first_when_ba[row["winner_order_BA"]])
    for group in ("LLMBar/Natural", "LLMBar/Adversarial (4 sets)"):
        rows = sorted(
            ((k, figures(*v)) for k, v in setups.items() if k[0] == group),
            key=lambda r: (-r[1].accuracy, r[0]),
        )
        print(f"\nB: {group}, {len(rows)} judge set-ups, in both orders\n")
        print(
            "| judge | strategy | pairs | accuracy, consistent pairs [95%] | consistency [95%] | "
            "first won / second won | first share [95%] | p (no preference) |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for (_, llm, strategy), f in rows:
            a_low, a_high = f.accuracy_interval
            c_low, c_high = f.consistency_interval
            s_low, s_high = f.first_share_interval
            share = (
                "-"
                if math.isnan(f.first_share)
                else (f"{f.first_share:.2f} [{s_low:.2f}, {s_high:.2f}]")
            )
            print(
                f"| {llm} | {strategy} | {f.n} | {f.accuracy:.3f} [{a_low:.2f}, {a_high:.2f}] | "
                f"{f.consistency:.3f} [{c_low:.2f}, {c_high:.2f}] | {f.first_won} / "
                f"{f.second_won} | {share} | {f.position_p:.2g} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20_000, help="judges per row")
    parser.add_argument("--seed", type=int, default=20261204)
    args = parser.parse_args()
    started = time.perf_counter()
    print(f"A: {args.reps} simulated judges per row\n")
    failed = run(args.reps, args.seed)
    llmbar()
    print(f"\n(seed {args.seed}; {time.perf_counter() - started:.0f} s)")
    if failed:
        raise SystemExit("outside the nominal level: " + "; ".join(failed))


if __name__ == "__main__":
    main()
