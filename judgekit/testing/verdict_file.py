"""A verdict file that scripts the fake provider per example, for `python -m judgekit.testing
--verdicts FILE`: JSONL, CSV or YAML records, one per example,

    {"id": "p1", "verdict": "pass"}
    {"id": "f2", "verdict": "rate_limit"}        <- a fault kind: every request of f2 gets it
    {"match": "I've blocked", "verdict": "fail"}  <- by a piece of the reply, as FakeServer scripts

`verdict` is pass, fail or a fault kind (judgekit.testing.FAULTS). A prompt never holds an
example's id, so an `id` is found by its output text: its calibration set (in `--sets`; the one
of `criterion`, when the record names it) gives the example's output, and a request is that
example's when the prompt's judged reply (the last `<output>` block of a judgekit prompt) is
exactly that text; a prompt without an `<output>` block (a custom judge.prompt) is the example's
when it contains the text, the longest such text first. A `match` record needs no set: a request
is its when the judged reply contains `match`. Examples the file does not list get the default.

>>> answer = scripted({"reply one": True, "reply": Fault("hang")}, {}, default=False)
>>> answer("<output>\\nreply one\\n</output>"), answer("<output>\\nreply two\\n</output>")
(True, False)
>>> # no <output> block: contained, longest first
>>> answer("Judge this: reply one, then PASS or FAIL")
True
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import ValidationError, model_validator

from judgekit.errors import InputError, Problem
from judgekit.inputs.catalog import find_set
from judgekit.inputs.files import RECORD_SUFFIXES, iter_records
from judgekit.inputs.sets import load_set
from judgekit.inputs.validation import ExampleId, Frozen, problems_of
from judgekit.testing.scripts import FAULTS, Answer, Fault, judged_reply

Verdict = Literal[("pass", "fail", *FAULTS)]  # type: ignore[valid-type]  # pass, fail or a fault kind


class ScriptedVerdict(Frozen):
    """One record of a verdict file: which example (`id`, or `match`), and what it gets."""

    id: ExampleId | None = None
    criterion: str | None = None
    match: str | None = None
    verdict: Verdict

    @model_validator(mode="after")
    def _names_an_example(self) -> ScriptedVerdict:
        if (self.id is None) == (self.match is None):
            raise ValueError(
                "give the example's id (found by its output in the calibration sets) or match (a "
                "piece of text its reply contains), one of the two"
            )
        return self

    def scripted(self) -> bool | Fault:
        return self.verdict == "pass" if self.verdict in ("pass", "fail") else Fault(self.verdict)


def _outputs(
    sets_dir: Path, criterion: str | None, cache: dict[str | None, dict[str, list[str]]]
) -> dict[str, list[str]]:
    """Each example id's outputs in the calibration sets (of one criterion, or of all)."""
    if criterion not in cache:
        if criterion is not None:
            paths = [find_set(sets_dir, criterion)]
        elif sets_dir.is_dir():
            paths = sorted(p for p in sets_dir.iterdir() if p.suffix.lower() in RECORD_SUFFIXES)
        else:
            raise InputError.one(
                sets_dir,
                "",
                "is not a folder of calibration sets; pass --sets DIR, or give "
                "each record a match instead of an id",
            )
        found: dict[str, list[str]] = {}
        for path in paths:
            for example in load_set(path, path.stem).examples:
                found.setdefault(example.id, []).append(example.output)
        cache[criterion] = found
    return cache[criterion]


def load_script(
    path: Path, sets_dir: Path
) -> tuple[dict[str, bool | Fault], dict[str, bool | Fault]]:
    """A verdict file, read and checked: the verdicts by output text (`id` records) and by a piece
    of the reply (`match` records). Every problem of the file is listed at once."""
    by_output: dict[str, bool | Fault] = {}
    by_match: dict[str, bool | Fault] = {}
    problems: list[Problem] = []
    sets: dict[str | None, dict[str, list[str]]] = {}
    if not path.is_file():
        raise InputError.one(
            path, "", "no such verdict file; pass --verdicts with a JSONL, CSV or YAML file"
        )
    for location, record in iter_records(path):
        if isinstance(record, Problem):
            problems.append(record)
            continue
        try:
            row = ScriptedVerdict.model_validate(record)
        except ValidationError as error:
            problems += problems_of(error, str(path), location)
            continue
        if row.match is not None:
            by_match[row.match] = row.scripted()
            continue
        outputs = _outputs(sets_dir, row.criterion, sets).get(row.id or "")
        if not outputs:
            where = (
                f"the calibration set of {row.criterion!r}"
                if row.criterion
                else f"the calibration sets in {sets_dir}"
            )
            problems.append(
                Problem(
                    str(path),
                    location,
                    f"no example {row.id!r} in {where}; check the id, pass "
                    "--sets DIR, or give a match (a piece of text its reply contains) instead",
                )
            )
            continue
        for output in outputs:
            by_output[output] = row.scripted()
    if problems:
        raise InputError(problems)
    if not by_output and not by_match:
        raise InputError.one(path, "", "holds no verdicts")
    return by_output, by_match


def scripted(
    by_output: Mapping[str, bool | Fault],
    by_match: Mapping[str, bool | Fault],
    default: bool | Fault = True,
) -> Answer:
    """The answer function of a verdict file (the rules above)."""
    longest = sorted(by_output, key=len, reverse=True)

    def answer(prompt: str) -> bool | Fault:
        reply = judged_reply(prompt)
        if reply in by_output:
            return by_output[reply]
        if reply == prompt:  # no <output> block: the example's output somewhere in the prompt
            found = next((text for text in longest if text and text in prompt), None)
            if found is not None:
                return by_output[found]
        return next((verdict for needle, verdict in by_match.items() if needle in reply), default)

    return answer
