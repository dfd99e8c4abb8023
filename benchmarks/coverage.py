"""Coverage of judgekit's intervals, by simulation.

    python benchmarks/coverage.py            # 2,000 synthetic suites / samples per design

1. Corrected pass rate (judgekit.estimates.corrected_pass_rate), judge TPR 0.9 / TNR 0.8:
   A  true rate 0.7; 100 labelled passes + 100 labelled fails calibrate; 200 unlabelled judged.
   B  400 items, 200 random ones labelled (their own outcomes used too), 200 judged only.
   C  as A with true rate 0.3; also the coverage of a Wilson interval on the raw judged rate.
2. Cohen's kappa interval (judgekit.metrics.kappa_interval, Jeffreys posterior) at n = 30 and
   n = 100 on two cells: LLMBar-GPT-4-like (prevalence 0.5, TPR = TNR = 0.92, kappa 0.84) and
   WiCE-GPT-4-like (the observed cell 18 / 19 / 59 / 4 of tp / fp / tn / fn, kappa 0.46).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from judgekit.stats.metrics import kappa_from_counts, kappa_interval, wilson
from judgekit.stats.pass_rates import corrected_pass_rate


def judged(rng, truth, tpr=0.9, tnr=0.8):
    return np.where(truth, rng.random(truth.size) < tpr, rng.random(truth.size) >= tnr)


def design_a_or_c(rng, rate):
    tp, tn = rng.binomial(100, 0.9), rng.binomial(100, 0.8)
    passed = int(judged(rng, rng.random(200) < rate).sum())
    return corrected_pass_rate(passed, 200, (tp, 100), (tn, 100)), passed


def design_b(rng, rate):
    truth = rng.random(400) < rate
    verdicts = judged(rng, truth)
    order = rng.permutation(400)
    lab, unl = order[:200], order[200:]
    y, v = truth[lab], verdicts[lab]
    tpr = (int((y & v).sum()), int(y.sum()))
    tnr = (int((~y & ~v).sum()), int((~y).sum()))
    return corrected_pass_rate(
        int(verdicts[unl].sum()), 200, tpr, tnr, labelled=(int(y.sum()), 200)
    )


def coverage(intervals, truth):
    hits = [lo <= truth <= hi for lo, hi in intervals]
    share = sum(hits) / len(hits)
    return (
        share,
        math.sqrt(share * (1 - share) / len(hits)),
        float(np.mean([hi - lo for lo, hi in intervals])),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261130)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    print("| design | true rate | coverage (± MC s.e.) | mean width |\n|---|---|---|---|")
    a = [design_a_or_c(rng, 0.7)[0].interval for _ in range(args.reps)]
    print("| A corrected | 0.7 | {:.3f} ± {:.3f} | {:.3f} |".format(*coverage(a, 0.7)))
    b = [design_b(rng, 0.7).interval for _ in range(args.reps)]
    print(
        "| B corrected, labelled half used | 0.7 | {:.3f} ± {:.3f} | {:.3f} |".format(
            *coverage(b, 0.7)
        )
    )
    c_runs = [design_a_or_c(rng, 0.3) for _ in range(args.reps)]
    print(
        "| C corrected | 0.3 | {:.3f} ± {:.3f} | {:.3f} |".format(
            *coverage([r.interval for r, _ in c_runs], 0.3)
        )
    )
    raw = [wilson(passed, 200) for _, passed in c_runs]
    print(
        "| C raw judged rate (Wilson) | 0.3 | {:.3f} ± {:.3f} | {:.3f} |".format(
            *coverage(raw, 0.3)
        )
    )

    cells = {
        "LLMBar-like (kappa 0.84)": np.array([0.46, 0.04, 0.46, 0.04]),
        "WiCE-like (kappa 0.46)": np.array([18, 19, 59, 4]) / 100,
    }
    print("\n| cell | n | true kappa | coverage (± MC s.e.) | mean width |\n|---|---|---|---|---|")
    for name, probs in cells.items():
        truth = kappa_from_counts(*probs)
        for n in (30, 100):
            intervals = []
            for _ in range(args.reps):
                tp, fp, tn, fn = rng.multinomial(n, probs)
                labels = [True] * (tp + fn) + [False] * (fp + tn)
                verdicts = [True] * tp + [False] * fn + [True] * fp + [False] * tn
                intervals.append(kappa_interval(labels, verdicts, seed=int(rng.integers(2**31))))
            intervals = [(lo, hi) for lo, hi in intervals if not math.isnan(lo)]
            share, se, width = coverage(intervals, truth)
            print(f"| {name} | {n} | {truth:.3f} | {share:.3f} ± {se:.3f} | {width:.3f} |")
    print(f"\n({args.reps} per row, seed {args.seed}, {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
