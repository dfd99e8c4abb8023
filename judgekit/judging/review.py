"""The review queue: the replies whose verdicts selective judging escalated to a person, one file
per criterion (`.judgekit/review/<criterion>.jsonl`), in the shape of a calibration set without
labels — `judgekit label -c ID` opens it, `judgekit label --merge` moves the labelled ones into
the criterion's set. A reply is queued once, however often it was judged.

>>> import tempfile, pathlib
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> enqueue(root, "c", [{"output": "Your card is blocked.", "input": "I lost my card"}] * 2)
1
>>> queue_path(root, "c").read_text().count("\\n")
1
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from judgekit.fingerprint import canonical_hash
from judgekit.inputs.files import iter_records, locked, read_text, write_atomic
from judgekit.secrets import redact

QUEUE = Path(".judgekit") / "review"


def queue_path(root: Path, criterion_id: str) -> Path:
    return root / QUEUE / f"{criterion_id}.jsonl"


def enqueue(root: Path, criterion_id: str, replies: Iterable[dict[str, Any]]) -> int:
    """Add each reply ({input, output, context}) not yet queued for this criterion; return how many
    were added. Writers take turns under a lock, and the file is replaced whole: nothing is lost."""
    path = queue_path(root, criterion_id)
    with locked(path):
        text = read_text(path) if path.exists() else ""
        have = (
            {record.get("id") for _, record in iter_records(path, text) if isinstance(record, dict)}
            if text
            else set()
        )
        added = []
        for reply in replies:
            fields = {
                k: redact(reply[k])
                for k in ("input", "output", "context")
                if reply.get(k) is not None
            }
            record = {
                "id": "review-" + canonical_hash(fields)[:12],
                **fields,
                "tags": ["escalated"],
            }
            if record["id"] not in have and "output" in fields:
                have.add(record["id"])
                added.append(json.dumps(record, ensure_ascii=False) + "\n")
        if added:
            write_atomic(
                path, text + ("" if not text or text.endswith("\n") else "\n") + "".join(added)
            )
    return len(added)
