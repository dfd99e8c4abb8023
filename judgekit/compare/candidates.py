"""The candidate judges of a comparison, from the command line or a compare.yaml, checked once.

From the command line, the live candidates are every combination of the models (`--model`, else
the criterion's judge.model), the criterion and its prompt variants (`--variant`), and the trial
counts (`--trials 1,3`); each verdict file (`--verdicts`) adds one candidate, or one per value
of its `candidate` column. A candidate is named by what sets it apart from the others.

A compare.yaml lists them instead (paths are relative to the file):

    criterion: card-block-confirmed
    baseline: mini
    candidates:
      - {name: mini, model: openai/gpt-4o-mini}
      - {name: mini-short, model: openai/gpt-4o-mini,
         variant: variants/card-block-confirmed.short.yaml}
      - {name: big-x3, model: openai/gpt-4o, trials: 3}
      - {name: last-quarter, verdicts: runs/q3.jsonl}
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field, ValidationError

from judgekit.errors import InputError, Problem
from judgekit.inputs.criteria import JUDGED, Criterion, load_variant, with_trials
from judgekit.inputs.files import read_yaml
from judgekit.inputs.validation import Frozen, problems_of
from judgekit.judging.recorded import RecordedVerdict, load_by_candidate


@dataclass
class Spec:
    """One candidate: the criterion as it judges (model and trials set in it), or recorded
    verdicts."""

    name: str
    criterion: Criterion
    model: str | None = None
    variant: Path | None = None
    trials: int | None = None
    verdicts: Path | None = None
    records: list[RecordedVerdict] = field(default_factory=list)
    column: str | None = None  # the verdict file's `candidate` value, when it holds several

    @property
    def live(self) -> bool:
        return self.verdicts is None


def with_model(criterion: Criterion, model: str | None) -> Criterion:
    """The criterion judged by `model` (as its file would say after `--adopt`)."""
    if model is None or not isinstance(criterion, JUDGED) or criterion.judge.model == model:
        return criterion
    return criterion.model_copy(
        update={"judge": criterion.judge.model_copy(update={"model": model})}
    )


def _judged_variant(path: Path, criterion_id: str) -> Criterion:
    variant = load_variant(path, criterion_id)
    if not isinstance(variant, JUDGED):
        raise InputError.one(
            path, "kind", "a variant is judged by a model: make it an llm or claims criterion"
        )
    return variant


def _variant_name(path: Path, criterion_id: str) -> str:
    stem = path.stem
    return (
        stem[len(criterion_id) + 1 :]
        if stem.startswith(criterion_id + ".") and len(stem) > len(criterion_id) + 1
        else stem
    )


def from_options(
    base: Criterion,
    models: Sequence[str] = (),
    variants: Sequence[Path] = (),
    trials: Sequence[int] = (),
    verdicts: Sequence[Path] = (),
) -> list[Spec]:
    """The candidates the command line names (see the module's docstring)."""
    problems: list[Problem] = []
    loaded: list[tuple[str, Path | None, Criterion]] = [("base", None, base)]
    for path in variants:
        try:
            loaded.append((_variant_name(path, base.id), path, _judged_variant(path, base.id)))
        except InputError as error:
            problems += error.problems
    specs: list[Spec] = []
    if models or variants or trials or not verdicts:
        if not isinstance(base, JUDGED):
            problems.append(
                Problem(
                    "--criterion",
                    base.id,
                    "is a regex criterion: it has no judge to compare; "
                    "choose an LLM or claims criterion",
                )
            )
        if not models and isinstance(base, JUDGED) and not base.judge.model:
            problems.append(
                Problem("--model", "", f"{base.id} names no judge.model; pass --model (repeatable)")
            )
        if problems:
            raise InputError(problems)
        specs = _live(models, loaded, trials, variants)
    for path in verdicts:
        try:
            groups = load_by_candidate(path)
        except InputError as error:
            problems += error.problems
            continue
        for name, records in groups.items():
            several = len(groups) > 1 or name != path.stem
            specs.append(
                Spec(name, base, verdicts=path, records=records, column=name if several else None)
            )
    if problems:
        raise InputError(problems)
    return _unique(specs, "the command line")


def _live(
    models: Sequence[str],
    loaded: list[tuple[str, Path | None, Criterion]],
    trials: Sequence[int],
    variants: Sequence[Path],
) -> list[Spec]:
    """The live candidates: every model by every variant (the base criterion first) by every
    trial count."""
    problems: list[Problem] = []
    specs: list[Spec] = []
    model_choices: Sequence[str | None] = models or [None]
    trial_choices: Sequence[int | None] = trials or [None]
    for model, (vname, vpath, criterion), count in itertools.product(
        model_choices, loaded, trial_choices
    ):
        judged = with_trials(with_model(criterion, model), count)
        named = judged.judge.model  # type: ignore[union-attr]  # a regex criterion is refused above
        if not named:  # a variant of its own, naming no model, and no --model
            problems.append(
                Problem(
                    str(vpath or "--model"),
                    "judge.model",
                    "names no model and no --model is given; set judge.model in the variant, "
                    "or pass --model",
                )
            )
            continue
        # Named by what sets it apart: the model, the variant, the trials, whichever vary.
        parts = [
            named if len(models) > 1 else None,
            vname if variants else None,
            f"x{count}" if len(trials) > 1 else None,
        ]
        specs.append(
            Spec(" ".join(p for p in parts if p) or named or vname, judged, named, vpath, count)
        )
    if problems:
        raise InputError(problems)
    return specs


class _Entry(Frozen):
    name: str = Field(min_length=1)
    model: str | None = None
    variant: str | None = None
    trials: int | None = Field(None, ge=1, le=100)
    verdicts: str | None = None
    candidate: str | None = Field(
        None, description="Of a verdict file holding several: this value of its column."
    )


class _File(Frozen):
    criterion: str | None = None
    baseline: str | None = None
    candidates: list[_Entry] = Field(min_length=1)


def read_file(path: Path) -> tuple[str | None, str | None, list[_Entry]]:
    """A compare.yaml: (criterion id, baseline, entries), every problem listed."""
    data = read_yaml(path)
    try:
        parsed = _File.model_validate(data)
    except ValidationError as error:
        raise InputError(problems_of(error, str(path))) from None
    return parsed.criterion, parsed.baseline, list(parsed.candidates)


def from_file(path: Path, base: Criterion, entries: list[_Entry]) -> list[Spec]:
    """The candidates a compare.yaml lists, its paths relative to it."""
    problems: list[Problem] = []
    specs: list[Spec] = []
    groups: dict[Path, dict[str, list[RecordedVerdict]]] = {}
    for i, entry in enumerate(entries):
        where = f"candidates[{i}] ({entry.name})"
        if entry.verdicts is not None:
            if entry.model or entry.variant or entry.trials:
                problems.append(
                    Problem(
                        str(path),
                        where,
                        "a recorded candidate is its verdict file alone; "
                        "drop model, variant and trials (give --model to calibrate to name it)",
                    )
                )
                continue
            file = path.parent / entry.verdicts
            try:
                found = groups.setdefault(file, load_by_candidate(file))
            except InputError as error:
                problems += error.problems
                continue
            key = entry.candidate or (next(iter(found)) if len(found) == 1 else None)
            if key not in found:
                problems.append(
                    Problem(
                        str(path),
                        where,
                        f"say which candidate of {entry.verdicts} it is "
                        f"(candidate: one of {', '.join(sorted(found))})",
                    )
                )
                continue
            specs.append(
                Spec(
                    entry.name,
                    base,
                    verdicts=file,
                    records=found[key],
                    column=key if len(found) > 1 or entry.candidate else None,
                )
            )
            continue
        criterion = base
        if entry.variant is not None:
            try:
                criterion = _judged_variant(path.parent / entry.variant, base.id)
            except InputError as error:
                problems += error.problems
                continue
        judged = with_trials(with_model(criterion, entry.model), entry.trials)
        if not isinstance(judged, JUDGED):
            problems.append(
                Problem(
                    str(path), where, f"{base.id} is a regex criterion: it has no judge to compare"
                )
            )
            continue
        if not judged.judge.model:
            problems.append(
                Problem(
                    str(path),
                    where,
                    "names no model and the criterion names no judge.model; add model:",
                )
            )
            continue
        specs.append(
            Spec(
                entry.name,
                judged,
                judged.judge.model,
                path.parent / entry.variant if entry.variant else None,
                entry.trials,
            )
        )
    if problems:
        raise InputError(problems)
    return _unique(specs, str(path))


def _unique(specs: list[Spec], where: str) -> list[Spec]:
    twice = sorted(name for name, count in Counter(s.name for s in specs).items() if count > 1)
    if twice:
        raise InputError.one(
            where, "candidates", f"two candidates are named {', '.join(twice)}; name each once"
        )
    if len(specs) < 2:
        raise InputError.one(
            where,
            "candidates",
            f"{len(specs)} candidate: a comparison needs two or more "
            "(--model, --variant, --trials, --verdicts, or a compare.yaml)",
        )
    return specs
