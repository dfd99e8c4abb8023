"""`judgekit improve` with few-shot examples drawn from a set that shares replies with its test
split, by simulation through the real code: the set loader, the few-shot proposal, the held-out
discipline (judgekit.inputs.heldout, judgekit.inputs.identity) and the acceptance test.

    python benchmarks/heldout.py               # 1,000 simulated improve runs per row
    python benchmarks/heldout.py --runs 100    # quicker

Each run writes a project: a criterion judged on its output, dev N_DEV examples and test N_TEST,
half known-good, where COPIED test examples show the judge exactly what a dev example shows it
(the same output, with another input, which this judge never reads): what a repeated run
imported twice, or a reply that comes back in production, produces. The copied dev examples are
the current judge's disagreements, from which `improve` draws its few-shot examples first. The
fake judge (in process) is right on a reply with a chance q drawn per reply (Beta(4, 1), mean
0.8), the same for the current judge and the candidate on the test split's replies: the
candidate is no better there (the null). It fits dev (q + 0.15 on the replies only dev holds,
so that it wins the dev search and the test split is looked at), and it answers right any reply
it is shown as a few-shot example. `improve` runs as a user runs it (`--shots 8`, the dev search
within a call budget that keeps the few-shot candidate alone), and the share of runs that accept
is counted.

- `copies first in dev`: the set file holds the dev examples first.
- `copies first in test`: the test examples first (the copies kept are then the test ones).

Beside each share, the same runs' candidate counted on every test row (the copies and the rows
the candidate is shown as few-shot examples included), as held-out evidence was counted before
the discipline.

The script exits non-zero when a share with the discipline exceeds the look's alpha (0.025) by
more than 2 Monte Carlo standard errors.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import yaml

from judgekit.improve.search import Search, improve
from judgekit.llm.protocol import Request
from judgekit.pipeline import Options
from judgekit.stats.acceptance import accept, look_alpha
from judgekit.testing import FakeLLM, judged_reply, prompt_of

N_DEV, N_TEST, COPIED, SHOTS, ALPHA, DEV_GAIN = 100, 100, 8, 8, 0.05, 0.15


def _draw(seed: int, reply: str, who: str) -> float:
    digest = hashlib.sha256(f"{seed}\0{reply}\0{who}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _hardness(seed: int, reply: str) -> float:
    """q ~ Beta(4, 1) by inversion: q = u ** (1 / 4)."""
    return _draw(seed, reply, "q") ** 0.25


def _rows(seed: int, test_first: bool) -> list[dict]:
    rows = []
    for i in range(N_DEV):
        rows.append(_row(f"d{i}", f"<r{seed}-{i}> reply", i % 2 == 1, "dev"))
    test = [_row(f"t{i}", f"<r{seed}-{1000 + i}> reply", i % 2 == 1, "test") for i in range(N_TEST)]
    # The dev replies the current judge gets wrong (by its fixed draw), copied into the test split.
    copied = _copied(seed)
    for k, r in enumerate(r for r in rows if r["output"] in copied):
        test[k] = {**r, "id": f"t{k}", "split": "test", "input": f"another question {k}"}
    return test + rows if test_first else rows + test


def _row(rid: str, output: str, passed: bool, split: str) -> dict:
    return {"id": rid, "input": "q", "output": output, "passed": passed, "split": split}


def _right(seed: int, reply: str, who: str) -> bool:
    """Whether judge `who` is right on the reply: its own draw under the reply's chance, which the
    candidate beats by DEV_GAIN on the replies only the dev split holds (it fits dev, and is no
    better on any reply of the test split, a copied one included)."""
    gain = DEV_GAIN if who == "candidate" and _dev_only(seed, reply) else 0.0
    return _draw(seed, reply, who) < min(_hardness(seed, reply) + gain, 1.0)


def _dev_only(seed: int, reply: str) -> bool:
    number = int(reply[reply.index("-") + 1 : reply.index(">")])
    return number < 1000 and reply not in _copied(seed)


@functools.lru_cache(maxsize=4)
def _copied(seed: int) -> frozenset[str]:
    """The dev replies copied into the test split: the current judge's first COPIED mistakes."""
    replies = (f"<r{seed}-{i}> reply" for i in range(N_DEV))
    return frozenset([r for r in replies if not _right(seed, r, "current")][:COPIED])


def _fake(seed: int, labels: dict[str, bool]) -> FakeLLM:
    def answer(request: Request) -> str:
        prompt = prompt_of(request.messages)
        reply = judged_reply(prompt)
        label = labels[reply]
        shown = prompt.count(reply) > 1  # the reply is one of the few-shot examples too
        # every judge the same chance per reply; "candidate" draws apart from "current"
        who = "candidate" if "Examples of correct decisions" in prompt else "current"
        right = shown or _right(seed, reply, who)
        return json.dumps({"reasoning": "simulated", "passed": label if right else not label})

    return FakeLLM(answer)


def one_run(seed: int, test_first: bool) -> tuple[bool, bool]:
    """One improve run: (accepted with the discipline, accepted counting every test example)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "criteria").mkdir()
        (root / "calibration_sets").mkdir()
        (root / "criteria" / "c.yaml").write_text(
            yaml.safe_dump(
                {
                    "id": "c",
                    "question": "Is it good?",
                    "inputs": ["output"],
                    "judge": {"model": "openai/judge"},
                }
            )
        )
        rows = _rows(seed, test_first)
        (root / "calibration_sets" / "c.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in rows)
        )
        labels = {r["output"]: r["passed"] for r in rows}
        found = improve(
            Options(
                criteria_dir=root / "criteria",
                sets_dir=root / "calibration_sets",
                cache_dir=None,
                seed=seed,
            ),
            "c",
            # the current judge and the few-shot candidate fit the budget; the settings do not
            Search(shots=SHOTS, budget=2 * N_DEV, alpha=ALPHA),
            root / "h.sqlite",
            llm=_fake(seed, labels),
        )
        if found.best is None or found.test is None:
            return False, False
        # Counted as before the discipline: every test row held-out evidence, the copies and the
        # replies the candidate is shown included (the fake's verdicts are fixed per reply).
        shots = {s.output for s in found.best.spec.criterion.examples}
        tests = [r for r in rows if r["split"] == "test"]
        old = accept(
            [r["passed"] for r in tests],
            [_verdict(seed, r, "current", set()) for r in tests],
            [_verdict(seed, r, "candidate", shots) for r in tests],
            look_alpha(ALPHA, 1),
        )
        return found.accepted, old.accepted


def _verdict(seed: int, row: dict, who: str, shots: set[str]) -> bool:
    right = row["output"] in shots or _right(seed, row["output"], who)
    return row["passed"] if right else not row["passed"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261202)
    args = parser.parse_args()
    level = look_alpha(ALPHA, 1)
    failed = False
    started = time.perf_counter()
    print(
        "| case | runs | level | accepted, with the discipline (± MC s.e.) "
        "| accepted, counting every test row |"
    )
    print("|---|---|---|---|---|")
    for name, test_first in (("copies first in dev", False), ("copies first in test", True)):
        results = [one_run(args.seed + i, test_first) for i in range(args.runs)]
        share = sum(a for a, _ in results) / args.runs
        before = sum(b for _, b in results) / args.runs
        se = math.sqrt(max(level * (1 - level), 1e-12) / args.runs)
        print(f"| {name} | {args.runs} | {level} | {share:.3f} ± {se:.3f} | {before:.3f} |")
        failed |= share > level + 2 * se
    print(f"\n{time.perf_counter() - started:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
