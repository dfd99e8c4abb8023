"""Fleiss' kappa on real annotation designs, against statsmodels: each example labelled by its own
k of N annotators (the same number per example, not the same people), and a design where a third
annotator adjudicates only the disagreements (labels per example vary: undefined, said why).

    python benchmarks/agreement.py

Exact computations on simulated labels (seeded): judgekit's figure beside statsmodels' on the same
table of counts.
"""

from __future__ import annotations

import random

import numpy as np
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss

from judgekit.stats.raters import fleiss_kappa


def k_of_n(cases: int, k: int, n: int, accuracy: float, seed: int) -> list[list[bool | None]]:
    """Each case's true label, seen right by each of its k annotators (drawn from n) with
    `accuracy`; None where an annotator did not label the case."""
    rng = random.Random(seed)
    rows = []
    for _ in range(cases):
        truth = rng.random() < 0.6
        chosen = set(rng.sample(range(n), k))
        rows.append(
            [
                (truth if rng.random() < accuracy else not truth) if a in chosen else None
                for a in range(n)
            ]
        )
    return rows


def table(rows: list[list[bool | None]]) -> np.ndarray:
    return np.array([[sum(x is True for x in r), sum(x is False for x in r)] for r in rows])


def main() -> None:
    print("| design | examples | judgekit | statsmodels | difference |")
    print("|---|---|---|---|---|")
    designs = {
        "6 examples, 3 of 4 annotators each": k_of_n(6, 3, 4, 0.8, seed=1),
        "3,728 cases, 5 of 10 annotators each": k_of_n(3728, 5, 10, 0.97, seed=2),
        "500 cases, 2 of 3 annotators each": k_of_n(500, 2, 3, 0.9, seed=3),
    }
    for name, rows in designs.items():
        ours, theirs = fleiss_kappa(rows), statsmodels_fleiss(table(rows))
        print(f"| {name} | {len(rows)} | {ours:.4f} | {theirs:.4f} | {abs(ours - theirs):.1e} |")
    # two annotators on every case, a third only where they disagree
    two = k_of_n(200, 2, 2, 0.85, seed=4)
    adjudicated = [r + ([True] if r[0] != r[1] else [None]) for r in two]
    try:
        fleiss_kappa(adjudicated)
        said = "computed"
    except ValueError as error:
        said = f"refused: {error}"
    print(f"\nadjudicated design (2 labels, 3 where the first two disagree): {said}")


if __name__ == "__main__":
    main()
