"""A project's inputs as one unit: its criteria and their calibration sets, loaded and checked
together, every problem of every file listed at once.

>>> from pathlib import Path
>>> root = Path(__file__).resolve().parents[2]  # the repository's bundled criteria and sets
>>> criteria, sets = load_inputs(root / "criteria", root / "calibration_sets", ["no-email-address"])
>>> [c.id for c in criteria], len(sets["no-email-address"].examples)
(['no-email-address'], 40)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from judgekit.errors import InputError, Problem
from judgekit.inputs.catalog import unknown_criteria
from judgekit.inputs.criteria import Criterion, read_criteria
from judgekit.inputs.pairwise import pairwise_paths
from judgekit.inputs.sets import CalibrationSet, load_sets


def load_inputs(
    criteria_dir: Path, sets_dir: Path, criterion_ids: Sequence[str] = (), split: str | None = None
) -> tuple[list[Criterion], dict[str, CalibrationSet]]:
    """Load the chosen criteria and their sets, validating everything once and listing the problems
    of every file together: a criterion file that does not load still has its set checked."""
    criteria, failed = read_criteria(criteria_dir)
    problems = [p for found in failed.values() for p in found]
    unloaded = list(failed)
    if criterion_ids:
        pairwise = {p.stem for p in pairwise_paths(criteria_dir)}  # calibrated on their own path
        problems += [
            Problem(
                str(criteria_dir / f"{cid}.yaml"),
                "kind",
                "is a pairwise criterion: `judgekit calibrate`, `gate` and `compare` take it, "
                "this command does not yet",
            )
            for cid in criterion_ids
            if cid in pairwise
        ]
        problems += unknown_criteria(
            [c for c in criterion_ids if c not in pairwise],
            {c.id for c in criteria} | set(failed),
            criteria_dir,
        )
        criteria = [c for c in criteria if c.id in set(criterion_ids)]
        unloaded = [i for i in unloaded if i in set(criterion_ids)]
    try:
        sets = load_sets(sets_dir, criteria, unloaded)
    except InputError as error:
        problems += error.problems
    if problems:
        raise InputError(problems)
    return criteria, select_split(sets, split)


def select_split(sets: dict[str, CalibrationSet], split: str | None) -> dict[str, CalibrationSet]:
    """Each set narrowed to one split (all examples when `split` is None); none left is an error."""
    if not split:
        return sets
    chosen = {cid: s.select(split) for cid, s in sets.items()}
    empty = [cid for cid, s in chosen.items() if not s.examples]
    if empty:
        raise InputError(
            [
                Problem(str(chosen[cid].path), "split", f"no example has split {split!r}")
                for cid in empty
            ]
        )
    return chosen
