"""Regex criteria on replies built to make a backtracking engine blow up: RE2 (what judgekit
runs) beside Python's re, which is given a time limit per case and stopped there.

    python benchmarks/regex.py

Each case runs in a fresh process, so a runaway re can be killed; the figure is the time of
`explain()` (RE2) or `re.search` alone, after the pattern is compiled.
"""

from __future__ import annotations

import subprocess
import sys

LIMIT_S = 20.0
# What `judgekit init` writes.
EMAIL = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
CASES = [
    ("(a+)+$", "nested repetition", "'a' * 40 + '!'"),
    ("(a+)+$", "nested repetition", "'a' * 1_000_000 + '!'"),
    (EMAIL, "scaffolded email pattern", "'a.' * 20_000"),
    (EMAIL, "scaffolded email pattern", "'a.' * 500_000"),
]

RUN = """
import re, sys, time
pattern, reply, engine = sys.argv[1], eval(sys.argv[2]), sys.argv[3]
if engine == "re2":
    from judgekit.inputs.criteria import RegexCriterion
    c = RegexCriterion(id="c", kind="regex", question="Clean?", pattern=pattern, match_means="fail")
    c.explain({"output": ""})
    started = time.perf_counter()
    c.explain({"output": reply})
else:
    compiled = re.compile(pattern)
    started = time.perf_counter()
    compiled.search(reply)
print(f"{time.perf_counter() - started:.3f}")
"""


def timed(pattern: str, reply: str, engine: str) -> str:
    try:
        done = subprocess.run(
            [sys.executable, "-c", RUN, pattern, reply, engine],
            capture_output=True,
            text=True,
            timeout=LIMIT_S,
            check=True,
        )
    except subprocess.TimeoutExpired:
        return f"> {LIMIT_S:.0f} (stopped)"
    return done.stdout.strip()


def main() -> None:
    print("| pattern | reply | characters | judgekit (RE2) s | Python re s |")
    print("|---|---|---|---|---|")
    for pattern, name, reply in CASES:
        size = len(eval(reply))
        print(
            f"| {name} | `{reply}` | {size:,} | {timed(pattern, reply, 're2')} | "
            f"{timed(pattern, reply, 're')} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
