"""The set's copies as the gate counts them: a report names the ids of its set that show the judge
the same text as another (judgekit.inputs.identity) and were counted once; the gate leaves those
out of the labels it checks the verdicts against only after finding them copies itself, from the
set and the criterion on disk. A report that does not say (written before judgekit counted
distinct examples) is not evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from judgekit.errors import InputError
from judgekit.inputs.catalog import CriterionFile
from judgekit.inputs.label_reader import LabelledSet
from judgekit.lazy import exports
from judgekit.report.reading import Untrusted

# The models load only when a report names copies: the gate's fast path starts without pydantic.
_heavy, _ = exports(
    "judgekit.gate.copies",
    {
        "load_criterion": "judgekit.inputs.criteria",
        "distinct": "judgekit.inputs.identity",
        "read_set": "judgekit.inputs.sets",
    },
)


def without_copies(
    labels: LabelledSet,
    copies: Mapping[str, Sequence[str]] | None,
    criterion: CriterionFile,
    by_code: bool = False,
) -> LabelledSet:
    """The labels less the copies the report declares, once they are found to be exactly the
    set's (the same ids, copies of the same examples); Untrusted otherwise. The set is read whole
    (the models, the criterion) when the report names copies, or when the fast reader saw two
    records with one reply (`repeats`): a report that names none must hold none. A criterion
    checked by code (`by_code`) may read another field than the reply: always read whole. Drawn
    examples that repeat another's reply stay, named (`LabelledSet.repeated`)."""
    if copies is None:
        raise Untrusted(
            "report.json does not say which examples of the set are copies of others (it was "
            "written before judgekit counted each example once)"
        )
    if not copies and not labels.repeats and not by_code:
        return labels
    read_set, load_criterion, distinct = (
        _heavy(n) for n in ("read_set", "load_criterion", "distinct")
    )
    try:
        loaded, problems = read_set(labels.path, labels.criterion_id)
        found = distinct(load_criterion(criterion.path), loaded.examples, str(labels.path))
    except InputError as error:
        raise Untrusted(f"the set's copies cannot be checked: {error}") from None
    if problems or found.problems:
        raise Untrusted("the set's copies cannot be checked: `judgekit validate` says why")
    declared = {kept: tuple(ids) for kept, ids in copies.items()}
    if declared != found.copies:
        raise Untrusted(
            "report.json's copies are not the set's: it names "
            f"{sum(len(c) for c in declared.values())} examples as copies, the set and the "
            f"criterion on disk show {found.copied}"
        )
    left_out = {i for ids in declared.values() for i in ids}
    return replace(
        labels,
        examples=tuple(e for e in labels.examples if e.id not in left_out),
        repeated=frozenset(found.repeated),
    )
