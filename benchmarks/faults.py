"""Fault injection at scale: every fault mode of the fake provider at 10% and 50%.

    python benchmarks/faults.py            # 200 examples per run, 16 runs

For each run: requests the server received, faults it injected, verdicts, abstentions (with
their causes), verdicts lost (examples with neither) and wrong verdicts (a decided verdict that
is not the scripted one: something counted as a verdict that was not one). The suite
`tests/test_reliability.py` runs the same matrix at 40 examples in CI.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from judgekit.llm.retry import RetryPolicy
from judgekit.pipeline import Options, measure
from judgekit.testing import FakeServer, script

MODES = [
    "rate_limit",
    "server_error",
    "hang",
    "reset",
    "truncated",
    "garbage",
    "refusal",
    "malformed_json",
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", type=int, default=200)
    args = parser.parse_args()
    n = args.examples
    retry = RetryPolicy(attempts=4, base_s=0.01, cap_s=0.05, first_contact_attempts=4, down_after=6)
    started = time.perf_counter()
    totals = Counter()
    print(
        "| fault | rate | requests | faults injected | verdicts | abstentions (cause) "
        "| lost | wrong |"
    )
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "criteria").mkdir()
        (root / "sets").mkdir()
        (root / "criteria" / "c.yaml").write_text(
            "id: c\nquestion: Does the reply say the card is blocked?\n"
        )
        rows = [
            {"id": f"{kind}{i}", "output": f"reply-{kind}{i}: text", "passed": kind == "p"}
            for kind in "pf"
            for i in range(n // 2)
        ]
        (root / "sets" / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        for mode in MODES:
            for rate in (0.1, 0.5):
                with FakeServer(
                    script({"reply-p": True, "reply-f": False}),
                    faults={mode: rate},
                    seed=7,
                    retry_after=0.02,
                ) as server:
                    c = measure(
                        Options(
                            criteria_dir=root / "criteria",
                            sets_dir=root / "sets",
                            model="openai/j",
                            api_base=server.url,
                            cache_dir=None,
                            retry=retry,
                            concurrency=16,
                            timeout_s=0.3,
                        )
                    ).criteria[0]
                decided = c.confusion.tp + c.confusion.fp + c.confusion.tn + c.confusion.fn
                # the script is always right: a wrong verdict was invented
                wrong = c.confusion.fp + c.confusion.fn
                causes = Counter(d.abstention for d in c.disagreements if d.verdict is None)
                lost = n - decided - c.abstained
                injected = server.requests - server.stats["ok"]
                totals.update(
                    requests=server.requests,
                    injected=injected,
                    examples=n,
                    lost=lost,
                    wrong=wrong,
                    abstained=c.abstained,
                )
                cause = ", ".join(f"{k} {v}" for k, v in causes.items()) or "-"
                print(
                    f"| {mode} | {rate:.0%} | {server.requests} | {injected} | {decided} | "
                    f"{c.abstained} ({cause}) | {lost} | {wrong} |"
                )
    print(
        f"\n{totals['examples']} examples judged through {totals['requests']} requests, "
        f"{totals['injected']} faults injected; {totals['abstained']} explained abstentions, "
        f"{totals['lost']} verdicts lost, {totals['wrong']} wrong verdicts "
        f"({time.perf_counter() - started:.0f} s)"
    )


if __name__ == "__main__":
    sys.exit(main())
