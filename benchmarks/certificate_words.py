"""What a selective judging certificate says of a judge that passes everything (issue 34, item 4):
an exact computation, no simulation.

    python benchmarks/certificate_words.py

On an imbalanced set, a judge that passes every reply agrees with the labels on the share of
known-good replies, and `certify` certifies that agreement when the share clears the target. For
each set (known-good / known-bad) the script prints the threshold certified, the agreement and
its bound, the certificate's words (which carry each class's rate on the verdicts given), and the
gate's rule on those verdicts (`judgekit.gate.rules._check_given` at the default thresholds: TPR
and TNR on the verdicts given at least 0.8, on the lower bound of their 95% interval). It exits
non-zero when a certificate's words leave out a class's rate, or when the gate's rule lets the
judge pass.
"""

from __future__ import annotations

import sys

from judgekit.gate.rules import Findings, _check_given
from judgekit.inputs.policy import Thresholds
from judgekit.stats.selective import certify

SETS = [(400, 25), (200, 50), (950, 50), (90, 10), (60, 60)]


def main() -> None:
    wrong = 0
    print("| known-good / known-bad | certified at | agreement (bound) | words | gate's rule |")
    print("|---|---|---|---|---|")
    for good, bad in SETS:
        labels = [True] * good + [False] * bad
        got = certify(labels, [True] * (good + bad), [0.9] * (good + bad), 0.9, 0.1)
        words = got.words()
        found = Findings()
        if got.threshold is not None:
            _check_given(good, bad, 0, 0, Thresholds(), found)
        if got.threshold is None:  # nothing certified: the gate FAILs a selective criterion
            rule = "FAIL: no threshold certified"
        else:
            rule = "FAIL: " + found.fails[0] if found.fails else "nothing against it"
            wrong += "TPR 1.00" not in words or "TNR 0.00" not in words or not found.fails
        threshold = "none" if got.threshold is None else f"{got.threshold}"
        agreement = (
            "-" if got.threshold is None else f"{got.agreement:.3f} ({got.agreement_lower:.3f})"
        )
        print(f"| {good} / {bad} | {threshold} | {agreement} | {words} | {rule} |")
    if wrong:
        sys.exit(f"{wrong} set(s): a class's rate missing from the words, or the rule passing")


if __name__ == "__main__":
    main()
