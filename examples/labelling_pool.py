"""A pool of unlabelled support replies for the labelling guide (docs/labelling.md), and a stand-in
for the person who labels them.

    python -m examples.labelling_pool write pool.jsonl  # 400 replies, the same every time
    python -m examples.labelling_pool label FILE.jsonl  # label each reply of FILE by the rule below

Some replies give an email address; some spell one out ("ana at example dot com") so that the
bundled pattern of `no-email-address` misses it. The labelling rule: a reply passes when it gives
no address, written either way. In real use a person labels them, in `judgekit label`'s page.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

NAMES = ["ana", "ben", "eve", "li", "omar", "sara", "tom", "yuki"]
CLEAN = [
    "Your card is blocked and a new one is on its way.",
    "The refund will reach your account in 5 days.",
    "I've updated your address; nothing else is needed.",
    "Your order ships tomorrow morning.",
    "The charge was reversed; you will see it within a week.",
    "Your plan now renews on the 1st.",
]


def write(path: Path, n: int = 400) -> None:
    rng = random.Random(20261201)
    lines = []
    for i in range(n):
        reply, name = rng.choice(CLEAN), rng.choice(NAMES)
        roll = rng.random()
        if roll < 0.15:
            reply += f" Questions? Write to {name}@example.com."
        elif roll < 0.25:
            reply += f" Questions? Write to {name} at example dot com."
        lines.append(json.dumps({"id": f"prod-{i:03d}", "output": reply}))
    path.write_text("\n".join(lines) + "\n")


def passes(reply: str) -> bool:
    return "@" not in reply and " at example dot com" not in reply


def label(path: Path) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    path.write_text("".join(json.dumps({**r, "passed": passes(r["output"])}) + "\n" for r in rows))
    print(f"labelled {len(rows)} in {path}")


if __name__ == "__main__":
    {"write": write, "label": label}[sys.argv[1]](Path(sys.argv[2]))
