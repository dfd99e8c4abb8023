"""A fake pairwise judge (judgekit.judging.pairwise's prompts) for the test doubles: a request
showing two replies (its `first` and `second` blocks) is answered by a rule, or as a verdict file
scripts the pair.

Rules: `first` / `second` (a judge that prefers a position whatever the replies: every pair
inconsistent), `tie`, `longer` / `shorter` (a judge that reads the replies: consistent). A verdict
file's record scripts one pair by its id in a pairwise set, the winner it names in each order:

    {"criterion": "more-helpful", "id": "p3", "a_first": "a", "b_first": "a"}   <- consistent
    {"criterion": "more-helpful", "id": "p4", "a_first": "a", "b_first": "b"}   <- first won both

>>> ask = with_pairs(lambda prompt: True, "longer", {})
>>> ask("<first>\\nshort\\n</first>\\n<second>\\nmuch longer\\n</second>")
'{"reasoning": "scripted", "better": "second"}'
>>> ask("<output>\\nnot a pair\\n</output>")
True
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from judgekit.errors import InputError, Problem
from judgekit.inputs.catalog import find_set
from judgekit.inputs.files import RECORD_SUFFIXES, iter_records
from judgekit.judging.pairwise import position_of
from judgekit.judging.recorded import is_pair_record
from judgekit.llm.protocol import Request
from judgekit.testing.scripts import Answer, FakeLLM, Fault, Sure, answer_text, block, prompt_of

PAIR_RULES = ("first", "second", "tie", "longer", "shorter")
Replies = tuple[str, str]  # (first, second), as a request shows them


def _by_rule(rule: str, first: str, second: str) -> str:
    if rule in ("first", "second", "tie"):
        return rule
    if len(first) == len(second):
        return "tie"
    longer = "first" if len(first) > len(second) else "second"
    return longer if rule == "longer" else ("second" if longer == "first" else "first")


def with_pairs(answer: Answer, rule: str, scripted: Mapping[Replies, str]) -> Answer:
    """`answer`, with pairwise requests answered as `scripted` says (by the replies in their
    positions), else by `rule`."""
    if rule not in PAIR_RULES:
        raise ValueError(f"pairwise rule {rule!r}: use one of {', '.join(PAIR_RULES)}")

    def ask(prompt: str) -> bool | str | Fault | Sure:
        first, second = block(prompt, "first"), block(prompt, "second")
        if first is None or second is None:
            return answer(prompt)
        said = scripted.get((first, second)) or _by_rule(rule, first, second)
        return json.dumps({"reasoning": "scripted", "better": said})

    return ask


def pair_judge(rule: str, scripted: Mapping[Replies, str] | None = None) -> FakeLLM:
    """A FakeLLM that answers pairwise requests by `rule` (or as `scripted`), to inject in
    process (`judgekit.measure(options, pair_judge("first"))`); other requests pass.

    >>> import asyncio
    >>> from judgekit.llm.protocol import Request
    >>> ask = [{"role": "user", "content": "<first>\\nA\\n</first>\\n<second>\\nB\\n</second>"}]
    >>> asyncio.run(pair_judge("first").complete(Request("m", ask))).text
    '{"reasoning": "scripted", "better": "first"}'
    """
    answer = with_pairs(lambda prompt: True, rule, scripted or {})

    def reply(request: Request) -> str:
        said = answer(prompt_of(request.messages))
        return said if isinstance(said, str) else answer_text(said)

    return FakeLLM(reply)


def _pairs_of(sets_dir: Path, criterion: str | None) -> dict[str, Replies]:
    if criterion is not None:
        paths = [find_set(sets_dir, criterion)]
    else:
        paths = sorted(p for p in sets_dir.glob("*") if p.suffix.lower() in RECORD_SUFFIXES)
    found: dict[str, Replies] = {}
    for path in paths:
        for _, record in iter_records(path):
            if isinstance(record, dict) and {"id", "output_a", "output_b"} <= record.keys():
                found[str(record["id"])] = (str(record["output_a"]), str(record["output_b"]))
    return found


def load_pair_script(path: Path, sets_dir: Path) -> dict[Replies, str]:
    """A verdict file's pairwise records (`a_first`, `b_first`: the winner, a, b or tie, with
    each reply shown first), as the position each request of the pair is answered."""
    out: dict[Replies, str] = {}
    problems: list[Problem] = []
    for location, record in iter_records(path):
        if not is_pair_record(record):
            continue
        criterion = record.get("criterion")
        replies = _pairs_of(sets_dir, criterion if isinstance(criterion, str) else None).get(
            str(record.get("id"))
        )
        winners = (record["a_first"], record["b_first"])
        if replies is None or not all(w in ("a", "b", "tie") for w in winners):
            problems.append(
                Problem(
                    str(path),
                    location,
                    "needs the id of a pair in its criterion's set and a_first, b_first each "
                    "a, b or tie",
                )
            )
            continue
        a, b = replies
        out[(a, b)] = position_of("a_first", winners[0]) or "tie"
        out[(b, a)] = position_of("b_first", winners[1]) or "tie"
    if problems:
        raise InputError(problems)
    return out
