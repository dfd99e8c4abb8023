"""`judgekit improve`'s acceptance rule (judgekit.stats.acceptance), by simulation.

    python benchmarks/improve.py               # 1,000 simulated runs per row
    python benchmarks/improve.py --runs 300    # quicker

A simulated criterion has a dev split (n_dev examples) and a test split (n_test), half
known-good. Each example has a chance q of being judged right, shared by every judge (some
examples are hard for all: q ~ Beta(4, 1), mean 0.8); a judge is right on it with chance q + its
gain (clipped to 1), abstains on 3% (an abstention counts as wrong), and is wrong otherwise. The
current judge's gain is 0. `improve` is simulated as it runs: K = 8 candidates are measured on
dev, the best by dev accuracy is picked (the search's selection effect), and only that one is
tested against the current judge on the test split, at the look's alpha (`look_alpha`: 0.025 for
the first look at alpha 0.05), with the TPR / TNR lower-bound tolerance of 0.02.

- null: every candidate's gain is 0: the share of runs that accept one must stay at or under
  the look's alpha; and over four looks at one test split (four improve runs, each a fresh
  search on dev, spending 0.025 + 0.0125 + 0.00625 + 0.003125) under the budget, 0.05.
- power: one candidate gains 0.1 on q, the seven others 0: the share of runs that accept it, at
  the first look. In this model a gain of 0.1 on q is not +10 points of accuracy (q + 0.1 is
  clipped at 1, and abstentions are wrong): the realised accuracies are printed (0.855 against
  0.776). A second power row is a real +10 points: every judge right on every example with
  chance 0.8 (0.9 for the better one), errors independent, no abstention.

The script exits non-zero when a null share exceeds its level by more than 2 Monte Carlo
standard errors.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from judgekit.stats.acceptance import MAX_LOOKS, accept, look_alpha

K, ALPHA, ABSTAIN, TOLERANCE = 8, 0.05, 0.03, 0.02


def judged(rng, labels, q, gain, abstain=ABSTAIN):
    """A judge's verdicts: right with chance q + gain, abstaining on `abstain` of examples."""
    right = rng.random(len(q)) < np.minimum(q + gain, 1.0)
    verdicts = np.where(right, labels, ~labels).astype(object)
    verdicts[rng.random(len(q)) < abstain] = None
    return verdicts


def one_look(rng, n_dev, n_test, gains, alpha, independent=False):
    """One improve run: pick the best candidate on dev, test it on the test split.
    (accepted, which). `independent`: every judge right with chance 0.8 + its gain on every
    example, errors independent, no abstention (accuracy exactly 0.8 against 0.9 for a gain of
    0.1), instead of the shared Beta(4, 1) difficulty with 3% abstentions."""
    split = {}
    for name, n in (("dev", n_dev), ("test", n_test)):
        labels = rng.random(n) < 0.5
        split[name] = (labels, np.full(n, 0.8) if independent else rng.beta(4, 1, n))
    abstain = 0.0 if independent else ABSTAIN
    labels, q = split["dev"]
    dev = [
        np.mean(
            [
                v is not None and v == y
                for y, v in zip(labels, judged(rng, labels, q, g, abstain), strict=True)
            ]
        )
        for g in gains
    ]
    best = int(np.argmax(dev))
    labels, q = split["test"]
    result = accept(
        labels.tolist(),
        judged(rng, labels, q, 0.0, abstain).tolist(),
        judged(rng, labels, q, gains[best], abstain).tolist(),
        alpha,
        TOLERANCE,
    )
    return result.accepted, best


def realised(gain: float, runs: int = 200_000, seed: int = 1) -> float:
    """The accuracy a judge of this gain has in the shared-difficulty model: E[min(q + gain, 1)]
    with q ~ Beta(4, 1), times 1 - ABSTAIN."""
    q = np.random.default_rng(seed).beta(4, 1, runs)
    return float(np.minimum(q + gain, 1.0).mean() * (1 - ABSTAIN))


def looks_on_one_test_split(rng, n_dev, n_test):
    """Four improve runs against one test split under the null: did any accept?"""
    labels = rng.random(n_test) < 0.5
    q = rng.beta(4, 1, n_test)
    current = judged(rng, labels, q, 0.0).tolist()
    for look in range(1, MAX_LOOKS + 1):
        dev_labels = rng.random(n_dev) < 0.5
        dev_q = rng.beta(4, 1, n_dev)
        dev = [
            np.mean(
                [
                    v is not None and v == y
                    for y, v in zip(dev_labels, judged(rng, dev_labels, dev_q, 0.0), strict=True)
                ]
            )
            for _ in range(K)
        ]
        # the pick: every candidate is equal under the null, but it is drawn as improve draws it
        int(np.argmax(dev))
        if accept(
            labels.tolist(),
            current,
            judged(rng, labels, q, 0.0).tolist(),
            look_alpha(ALPHA, look),
            TOLERANCE,
        ).accepted:
            return True
    return False


def share(hits: int, runs: int) -> tuple[float, float]:
    p = hits / runs
    q = min(max(p, 1 / runs), 1 - 1 / runs)
    return p, math.sqrt(q * (1 - q) / runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261203)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started, failed = time.perf_counter(), []
    first = look_alpha(ALPHA, 1)
    print(
        f"{args.runs} simulated improve runs per row; K = {K} candidates searched on dev; alpha "
        f"budget {ALPHA}\n"
    )
    print("| case | n dev | n test | level | accepted | picked the better one |")
    print("|---|---|---|---|---|---|")
    for n_dev, n_test in ((100, 100), (100, 300), (300, 300)):
        hits = sum(one_look(rng, n_dev, n_test, [0.0] * K, first)[0] for _ in range(args.runs))
        p, se = share(hits, args.runs)
        print(f"| null, one look | {n_dev} | {n_test} | {first} | {p:.3f} ± {se:.3f} | |")
        if p - first > 2 * se:
            failed.append(f"null one look n_test={n_test}: {p:.3f}")
        hits = sum(looks_on_one_test_split(rng, n_dev, n_test) for _ in range(args.runs))
        p, se = share(hits, args.runs)
        print(
            f"| null, {MAX_LOOKS} looks at one test split | {n_dev} | {n_test} | {ALPHA} | {p:.3f} "
            f"± {se:.3f} | |"
        )
        if p - ALPHA > 2 * se:
            failed.append(f"null {MAX_LOOKS} looks n_test={n_test}: {p:.3f}")
        for independent in (False, True):
            runs = [
                one_look(rng, n_dev, n_test, [0.1] + [0.0] * (K - 1), first, independent)
                for _ in range(args.runs)
            ]
            p, se = share(sum(a and b == 0 for a, b in runs), args.runs)
            picked = sum(b == 0 for _, b in runs) / args.runs
            case = (
                "0.90 against 0.80, independent errors"
                if independent
                else f"{realised(0.1):.3f} against {realised(0.0):.3f} (gain 0.1 on q)"
            )
            print(
                f"| {case}, one look | {n_dev} | {n_test} | {first} | {p:.3f} ± {se:.3f} | "
                f"{picked:.3f} |"
            )
    print(f"\n(seed {args.seed}; {time.perf_counter() - started:.0f} s)")
    if failed:
        raise SystemExit("over the nominal level: " + "; ".join(failed))


if __name__ == "__main__":
    main()
