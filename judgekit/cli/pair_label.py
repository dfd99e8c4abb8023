"""`judgekit label FILE` of a pairwise set: a local page that shows each unlabelled pair blind,
its two replies side by side as "reply 1" and "reply 2" in an order drawn per pair (which one is
`output_a` is never sent to the page), and writes the person's choice back as the pair's `label`
(a, b or tie; with --annotator, theirs in `labels`), in place, as a yes/no label is written
(judgekit.inputs.label_writer.write_pair_label). Keys 1 and 2 (the better reply), t (a tie), s
(skip), or the buttons.
"""

from __future__ import annotations

import json
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgekit.errors import InputError
from judgekit.inputs.files import read_text
from judgekit.inputs.journal import RolledBack, recover
from judgekit.inputs.label_writer import (
    check_annotator,
    pair_label_of,
    read_records,
    write_pair_label,
)

CHOICES = ("1", "2", "tie")


@dataclass
class PairItem:
    """One pair as the page shows it: the replies in their drawn places, nothing of which is a."""

    id: str
    input: str | None
    context: str | None
    left: str
    right: str
    label: str | None = None  # the choice the person made here (1, 2 or tie)


@dataclass
class PairSession:
    """What the pairs page shows and where its labels go (the handler of judgekit.cli.label_page
    serves it as it serves a yes/no session)."""

    path: Path
    question: str
    items: list[PairItem]
    annotator: str | None = None
    # per pair, whether reply 1 on the page is output_b: kept here, never sent to the page
    swapped: dict[str, bool] = field(default_factory=dict)
    mode: str = "pairs"
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    lock: threading.Lock = field(default_factory=threading.Lock)
    written: int = 0
    rolled_back: list[RolledBack] = field(default_factory=list)
    judge_note: str = "a pairwise criterion's judge is not shown on this page"

    def shown(self) -> list[dict[str, Any]]:
        return [vars(item) for item in self.items]

    def label(self, example_id: str, choice: Any) -> dict[str, Any]:
        """Write the person's choice (1, 2 or tie) as the pair's label (a, b or tie)."""
        item = next((i for i in self.items if i.id == example_id), None)
        if item is None:
            raise InputError.one(self.path, f"id {example_id}", "is not one of this page's pairs")
        if choice not in CHOICES:
            raise ValueError(f"choice must be one of {', '.join(CHOICES)}")
        first, second = ("b", "a") if self.swapped[example_id] else ("a", "b")
        label = {"1": first, "2": second, "tie": "tie"}[choice]
        with self.lock:
            undone = write_pair_label(self.path, example_id, label, annotator=self.annotator)
            if undone is not None:
                self.rolled_back.append(undone)
            item.label = choice
            self.written += 1
        return {**vars(item), "notices": [str(r) for r in self.rolled_back]}


def is_pair_file(path: Path) -> bool:
    """Whether a file to label holds a pairwise set (its first record has output_a)."""
    if path.suffix.lower() != ".jsonl":
        return False
    try:  # read as every file is: a regular file, checked before it is read (a FIFO never hangs)
        first = next((line for line in read_text(path).splitlines() if line.strip()), "")
        record = json.loads(first)
    except (InputError, ValueError):
        return False  # the yes/no page says what is wrong with it
    return isinstance(record, dict) and {"output_a", "output_b"} <= record.keys()


def pair_labelling(path: Path, question: str = "", annotator: str | None = None) -> PairSession:
    """A session over the pairs of `path` with no label yet (with `annotator`, none of theirs),
    each shown in an order drawn for it."""
    if annotator is not None:
        check_annotator(annotator)
    undone = recover(path)
    records = read_records(path, pairs=True)
    pending = [r for r in records if pair_label_of(r, annotator) is None]
    swapped = {str(r["id"]): bool(secrets.randbits(1)) for r in pending}
    items = []
    for r in pending:
        rid = str(r["id"])
        a, b = str(r["output_a"]), str(r["output_b"])
        left, right = (b, a) if swapped[rid] else (a, b)
        items.append(PairItem(rid, r.get("input") or None, r.get("context") or None, left, right))
    return PairSession(
        path,
        question or "Which reply better meets the criterion?",
        items,
        annotator,
        swapped,
        rolled_back=[undone] if undone else [],
    )
