"""Selective judging's certified threshold (judgekit.stats.selective.certify): simulated, on LLMBar.

    python benchmarks/selective.py              # 2,000 calibrations per row
    python benchmarks/selective.py --reps 500   # quicker

A. Validity. A simulated calibration set has n labelled examples (half known-good); the judge
abstains on 3% of them and gives the others a verdict and a confidence. Its verdict agrees with
the label with a probability that depends on the confidence, by design:

  separated  confidence ~ U(0, 1), agreement 0.5 + 0.49 / (1 + exp(-20 (c - 0.35))): near chance
             below 0.2, near certain above 0.5
  weak       confidence ~ U(0, 1), agreement 0.62 + 0.3 c
  flat       confidence ~ U(0, 1), agreement 0.88 whatever the confidence (uninformative)
  inverted   as separated, but right only 55% of the time above confidence 0.85: least accurate
             where surest
  logistic   agreement 1 / (1 + exp(1 - 5 c))
  trials     K = 5 trials per example, each abstaining with chance 0.05 and otherwise right with
             chance q (q ~ U(0.85, 1) on 60% of examples, U(0.35, 0.85) on the rest); the verdict is
             the majority of the decided trials (a tie or no decided trial: an abstention) and the
             confidence the share of all five trials agreeing with it (as `confidence_from_trials`,
             an abstaining trial does not agree): a few values, many examples tied at 1

`certify` chooses a threshold on each calibration set at min_agreement 0.8 / 0.9 and delta 0.1 /
0.05 with the default start, and at 0.8 / 0.1 and 0.9 / 0.1 starting at 50 covered examples
(`min_covered=50`); the six share each set, each searched both ways: the default (both procedures,
each at delta / 2; the examples named ex-0, ex-1, ...) and the fixed sequence from the top alone
(`procedure="fixed-sequence"`, at delta). The agreement realised at the threshold is measured twice:
exact from the design (the criterion), and on one fresh sample of 1,000,000 examples per design,
drawn apart from every calibration set. A calibration is valid when the realised agreement reaches
min_agreement, or when no threshold is certified (nothing is judged, nothing is wrong). The share
valid must reach 1 - delta: the script exits non-zero when 1 - share exceeds delta by more than 2
Monte Carlo standard errors. Beside it: how often no threshold certifies, the mean coverage (the
design's share of examples judged at the threshold, 0 when none certifies) and the best coverage a
valid threshold gives (the lowest threshold whose agreement, and every higher one's, reaches the
target), and the oracle's: what one who knows the design certifies on n examples on average, testing
one threshold chosen in advance with the exact test at delta (the most coverage(t) x P(the test
rejects at t)); the same guarantee, no search.

B. LLMBar's recorded verdicts (../shared/datasets/llmbar/verdicts.csv), every judge set-up on the
LLMBar/Natural set: verdict "output 1 is the better one" from the outputs in the original order,
label the same from the gold; confidence 1 when the judge picked the same output with the two
outputs swapped, else 0.5 (an unparseable answer in the original order is an abstention); certified
at min_agreement 0.9, delta 0.1. Skipped, with a message, when ../shared is absent.
"""

from __future__ import annotations

import argparse
import csv
import math
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from judgekit.stats.selective import agreement_of, certify

DESIGNS = ("separated", "weak", "flat", "trials", "inverted", "logistic")
NS = (100, 300, 1000)
PROCEDURES = ("both", "fixed-sequence")  # the default, and the fixed sequence from the top alone
TARGETS = [
    (0.8, 0.1, 1),
    (0.8, 0.05, 1),
    (0.9, 0.1, 1),
    (0.9, 0.05, 1),
    (0.8, 0.1, 50),
    (0.9, 0.1, 50),
]
# (min_agreement, delta, min_covered): the default start, and a start at 50 examples covered
ABSTAIN, K, TRIAL_ABSTAIN, FRESH = 0.03, 5, 0.05, 1_000_000
GRID = np.linspace(0.0, 1.0, 200_001)
LLMBAR = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "llmbar" / "verdicts.csv"


def agreement_curve(design: str, c):
    """Chance that a verdict of confidence c agrees with the label (the continuous designs)."""
    if design == "separated":
        return 0.5 + 0.49 / (1 + np.exp(-20 * (c - 0.35)))
    if design == "weak":
        return 0.62 + 0.3 * c
    if design == "inverted":  # as separated, but least accurate at its surest
        return np.where(c > 0.85, 0.55, 0.5 + 0.49 / (1 + np.exp(-20 * (c - 0.35))))
    if design == "logistic":
        return 1 / (1 + np.exp(1.0 - 5.0 * c))
    return np.full_like(np.asarray(c, dtype=float), 0.88)


def draw_q(rng, size):
    """The trials design's per-example chance that a trial is right."""
    easy = rng.random(size) < 0.6
    return np.where(easy, rng.uniform(0.85, 1.0, size), rng.uniform(0.35, 0.85, size))


def draw(rng, design: str, reps: int, n: int):
    """(labels, decided, verdicts, confidences), each (reps, n)."""
    labels = rng.random((reps, n)) < 0.5
    if design == "trials":
        q = draw_q(rng, (reps, n))[..., None]
        u = rng.random((reps, n, K))
        right = ((u >= TRIAL_ABSTAIN) & (u < TRIAL_ABSTAIN + (1 - TRIAL_ABSTAIN) * q)).sum(-1)
        wrong = (u >= TRIAL_ABSTAIN + (1 - TRIAL_ABSTAIN) * q).sum(-1)
        decided = right != wrong
        with np.errstate(invalid="ignore", divide="ignore"):
            confidence = np.where(decided, np.maximum(right, wrong) / K, 0.5)
        agree = right > wrong
    else:
        confidence = rng.random((reps, n))
        agree = rng.random((reps, n)) < agreement_curve(design, confidence)
        decided = rng.random((reps, n)) >= ABSTAIN
    return labels, decided, np.where(agree, labels, ~labels), confidence


def population(design: str):
    """The design's exact figures as functions of the threshold: t -> (agreement, coverage) of
    the verdicts with confidence >= t; and the candidate thresholds where they change."""
    if design == "trials":
        # midpoints: each uniform part integrated on its own grid
        q = (np.arange(40_000) + 0.5) / 40_000
        qs = [(0.6, 0.85 + 0.15 * q), (0.4, 0.35 + 0.5 * q)]
        mass, good = defaultdict(float), defaultdict(float)
        for r in range(K + 1):
            for w in range(K + 1 - r):
                if r == w:
                    continue
                a = K - r - w
                ways = math.factorial(K) / (
                    math.factorial(r) * math.factorial(w) * math.factorial(a)
                )
                p = sum(
                    share
                    * np.mean(
                        ways
                        * ((1 - TRIAL_ABSTAIN) * x) ** r
                        * ((1 - TRIAL_ABSTAIN) * (1 - x)) ** w
                        * TRIAL_ABSTAIN**a
                    )
                    for share, x in qs
                )
                level = max(r, w) / K  # an abstaining trial does not agree (judgekit's rule)
                mass[level] += p
                good[level] += p if r > w else 0.0
        levels = np.array(sorted(mass))

        def at(t):
            t = np.asarray(t, dtype=float)
            kept = levels[None, :] >= t.reshape(-1, 1) - 1e-12
            m = kept @ np.array([mass[v] for v in levels])
            g = kept @ np.array([good[v] for v in levels])
            with np.errstate(invalid="ignore"):
                return (g / m).reshape(t.shape), m.reshape(t.shape)

        return at, levels
    integral = np.concatenate(
        [
            [0.0],
            np.cumsum(
                (agreement_curve(design, GRID[1:]) + agreement_curve(design, GRID[:-1]))
                / 2
                * np.diff(GRID)
            ),
        ]
    )

    def at(t):
        t = np.asarray(t, dtype=float)
        # np.interp costs ms a call on this grid
        i = np.clip(np.searchsorted(GRID, t), 1, len(GRID) - 1)
        below = integral[i - 1] + (integral[i] - integral[i - 1]) * (t - GRID[i - 1]) / (
            GRID[i] - GRID[i - 1]
        )
        above = integral[-1] - below
        with np.errstate(invalid="ignore"):
            agreement = np.where(
                t < 1, above / np.maximum(1 - t, 1e-300), agreement_curve(design, 1.0)
            )
        return agreement, (1 - ABSTAIN) * (1 - t)

    return at, GRID


def best_coverage(at, candidates, target: float) -> float:
    """Coverage at the lowest threshold whose population agreement, and every higher one's,
    reaches the target."""
    agreement, cover = at(candidates[::-1])
    failing = np.flatnonzero(~(agreement >= target))
    first = failing[0] if len(failing) else len(candidates)
    return float(cover[first - 1]) if first else 0.0


def fresh_curve(design: str, seed: int):
    """Agreement and coverage on one fresh sample, as functions of the threshold."""
    rng = np.random.default_rng([seed, 9, DESIGNS.index(design)])
    labels, decided, verdicts, confidence = (x[0] for x in draw(rng, design, 1, FRESH))
    order = np.argsort(-confidence[decided], kind="stable")
    sure = confidence[decided][order]
    agreeing = np.cumsum((verdicts == labels)[decided][order])

    def at(t):
        covered = np.searchsorted(-sure, -np.asarray(t), side="right")  # confidence >= t
        return agreeing[np.maximum(covered - 1, 0)] / np.maximum(covered, 1), covered / FRESH

    return at


def oracle_coverage(at, candidates, n: int, target: float, delta: float) -> float:
    """What an oracle that knows the design certifies on n examples, on average: the one
    threshold, chosen in advance, whose exact test at delta on all n examples (no search, no
    correction) gives the most expected coverage, coverage(t) x P(the test rejects at t)."""
    from scipy.stats import binom

    ts = np.asarray(candidates if len(candidates) < 5000 else np.linspace(0, 1, 2001))
    agreement, cover = at(ts)
    best = 0.0
    for a, c in zip(np.atleast_1d(agreement), np.atleast_1d(cover), strict=True):
        m = int(round(n * float(c)))
        if m < 1 or math.isnan(float(a)):
            continue
        k = np.arange(m + 1)
        critical = np.flatnonzero(binom.sf(k - 1, m, target) <= delta)
        if len(critical):
            best = max(best, float(c) * float(binom.sf(critical[0] - 1, m, float(a))))
    return best


def run(design: str, n: int, reps: int, seed: int):
    """Per target and procedure: [valid (population), valid (fresh sample), none certified, sum
    of coverage]."""
    rng = np.random.default_rng([seed, DESIGNS.index(design), n])
    exact, _ = population(design)
    fresh = fresh_curve(design, seed)
    counts = np.zeros((len(TARGETS), len(PROCEDURES), 4))
    keys = [f"ex-{i}" for i in range(n)]
    for start in range(0, reps, 100):
        labels, decided, verdicts, confidence = draw(rng, design, min(100, reps - start), n)
        for i in range(len(labels)):
            given = np.where(decided[i], verdicts[i], None)
            for j, (target, delta, fewest) in enumerate(TARGETS):
                for p, procedure in enumerate(PROCEDURES):
                    c = certify(
                        labels[i], given, confidence[i], target, delta, fewest, keys, procedure
                    )
                    if c.threshold is None:
                        counts[j, p] += [1, 1, 1, 0]
                        continue
                    agreement, coverage = exact(c.threshold)
                    valid = fresh(c.threshold)[0] >= target
                    counts[j, p] += [agreement >= target, valid, 0, coverage]
    return counts


def share(hits: float, reps: int) -> tuple[float, float]:
    """The share and its Monte Carlo standard error (as if one went the other way when none did)."""
    p = hits / reps
    q = min(max(p, 1 / reps), 1 - 1 / reps)
    return p, math.sqrt(q * (1 - q) / reps)


def llmbar() -> None:
    """Part B: every judge set-up on LLMBar/Natural, certified at 0.9, 0.1."""
    if not LLMBAR.is_file():
        print(
            f"\nB skipped: {LLMBAR} is absent "
            "(a clone of the project alone; the shared data sets sit beside it)"
        )
        return
    setups: dict[tuple[str, str], list] = defaultdict(lambda: [[], [], []])
    with LLMBAR.open(newline="") as f:
        for row in csv.DictReader(f):
            if row["set"] != "LLMBar/Natural":
                continue
            ab, ba = row["winner_order_AB"], row["winner_order_BA"]
            labels, verdicts, confidences = setups[(row["llm"], row["strategy"])]
            labels.append(row["label"] == "1")
            verdicts.append(None if ab == "" else ab == "1")
            confidences.append(1.0 if ab != "" and ab == ba else 0.5)
    rows = []
    for (llm, strategy), (labels, verdicts, confidences) in setups.items():
        c = certify(labels, verdicts, confidences, min_agreement=0.9, delta=0.1)
        decided = [(x, v) for x, v in zip(labels, verdicts, strict=True) if v is not None]
        accuracy = sum(x == v for x, v in decided) / len(decided)
        top = agreement_of(labels, verdicts, confidences, 1.0)  # the verdicts both orders agree on
        rows.append(
            (
                c.coverage,
                c.agreement_lower if c.threshold is not None else -1,
                llm,
                strategy,
                accuracy,
                top,
                c,
            )
        )
    rows.sort(key=lambda r: (-r[0], -r[1], -r[5][0], r[2], r[3]))
    certified = [r for r in rows if r[6].threshold is not None]
    print(
        f"\nB: LLMBar/Natural, {len(rows)} judge set-ups, certified at min_agreement 0.9, delta "
        f"0.1 (confidence: the two orders agree); {len(certified)} certify a threshold\n"
    )
    print(
        "| judge | strategy | agreement, all verdicts | orders agree: agreement (of) | threshold | "
        "agreement covered | lower bound | covered | coverage [95%] | TPR / TNR covered |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for _, _, llm, strategy, accuracy, (top, same), c in rows:
        first = f"| {llm} | {strategy} | {accuracy:.3f} | {top:.3f} ({same}) |"
        if c.threshold is None:
            print(f"{first} none | | | 0 of {c.n} | | |")
            continue
        low, high = c.coverage_interval
        rates = " / ".join("-" if x is None else f"{x:.3f}" for x in (c.tpr, c.tnr))
        print(
            f"{first} {c.threshold:g} | {c.agreement:.3f} | {c.agreement_lower:.3f} | {c.covered} "
            f"of {c.n} | {c.coverage:.2f} [{low:.2f}, {high:.2f}] | {rates} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--reps", type=int, default=2000, help="calibration sets per design and size"
    )
    parser.add_argument(
        "--jobs", type=int, default=2, help="processes (the figures do not depend on it)"
    )
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()
    started, failed = time.perf_counter(), []
    cells = [(design, n) for design in DESIGNS for n in NS]
    with ProcessPoolExecutor(args.jobs) as pool:
        runs = {
            cell: pool.submit(run, *cell, args.reps, args.seed)
            for cell in sorted(cells, key=lambda c: -c[1])
        }
        print(
            "A: calibrations whose realised agreement at the certified threshold reaches the "
            f"target (± MC s.e.); nominal ≥ 1 - delta. {args.reps} calibration sets per design "
            "and n\n"
        )
        print(
            "| design | n | target | delta | min covered | best coverage | oracle | "
            "procedure | none certified | mean coverage | valid, population | valid, fresh 10^6 |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for design, n in cells:
            counts = runs[(design, n)].result()
            exact, candidates = population(design)
            for (target, delta, fewest), by_procedure in zip(TARGETS, counts, strict=True):
                best = best_coverage(exact, candidates, target)
                oracle = oracle_coverage(exact, candidates, n, target, delta)
                for procedure, (valid, valid_fresh, none, cover) in zip(
                    PROCEDURES, by_procedure, strict=True
                ):
                    p, se = share(valid, args.reps)
                    print(
                        f"| {design} | {n} | {target} | {delta} | {fewest} | {best:.3f} | "
                        f"{oracle:.3f} | {procedure} | {none / args.reps:.3f} | "
                        f"{cover / args.reps:.3f} | {p:.3f} ± {se:.3f} | "
                        f"{valid_fresh / args.reps:.3f} |",
                        flush=True,
                    )
                    if (1 - p) - delta > 2 * se:
                        failed.append(
                            f"{design} n={n} target={target} delta={delta} min_covered={fewest} "
                            f"{procedure}: {1 - p:.3f} failed"
                        )
    llmbar()
    print(f"\n(seed {args.seed}; {time.perf_counter() - started:.0f} s)")
    if failed:
        raise SystemExit("over the nominal level: " + "; ".join(failed))


if __name__ == "__main__":
    main()
