"""Pairwise results other tools published, read as a pairwise set (`--examples`) and as recorded
pairwise verdicts (a `candidate` per judge set-up, for `judgekit compare`; a column per order).

- **LLMBar** (its repository's `Dataset/` as `data/<set>/dataset.json`, and `verdicts.csv`: one
  row per set, item and judge set-up, the winner named with the outputs in each order, already
  in the original numbering; empty: the answer could not be parsed, an abstention here). A pair's
  id is `<set>-<idx>` (the set's last name, lower case); its tags name the set and its group.
- **PandaLM** (`testset-v1.json`: instruction, input, two responses and three annotators' labels,
  0 a tie; `<judge>-testset-v1.json`: a judge's verdict per item, asked in one order only, response
  1 first, `garbage` unparseable). Its judges' verdicts are recorded with `b_first` empty: the
  report says they were asked in one order, and the gate does not pass them.

>>> winner("1"), winner("2"), winner("0"), winner("Tie"), winner(""), winner("garbage")
('a', 'b', 'tie', 'tie', None, None)
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from judgekit.errors import InputError
from judgekit.inputs.files import read_text, write_atomic
from judgekit.inputs.parsing import parse_json

LLMBAR_SETS = (
    "LLMBar/Natural",
    "LLMBar/Adversarial/Neighbor",
    "LLMBar/Adversarial/GPTInst",
    "LLMBar/Adversarial/GPTOut",
    "LLMBar/Adversarial/Manual",
    "Processed/MT-Bench",
    "Processed/FairEval",
    "Processed/LLMEval2",
)
PANDALM_JUDGES = {"gpt-3.5-turbo": "gpt_result", "pandalm-7b": "pandalm_result"}
PAIR_FORMATS = ("llmbar", "pandalm")


def winner(value: Any) -> str | None:
    """A published verdict or label as a pair's winner: 1 is reply a, 2 is reply b, 0 (or Tie) a
    tie; None when there is none (an empty cell, an unparseable answer)."""
    said = str(value).strip().lower()
    return {"1": "a", "2": "b", "0": "tie", "tie": "tie"}.get(said)


def _json(path: Path) -> Any:
    """A published JSON file, read as judgekit reads every file (a regular file, checked)."""
    return parse_json(read_text(path), path)


@contextmanager
def _reading(path: Path, shape: str) -> Iterator[None]:
    """A published file whose records lack a field, or are not records: an InputError naming the
    file and what it should hold, not a traceback."""
    try:
        yield
    except (KeyError, TypeError, AttributeError) as error:
        raise InputError.one(
            path, "", f"is not {shape} (found no {error}); pass the folder of the published data"
        ) from None


def _short(name: str) -> str:
    return name.rsplit("/", 1)[-1].lower()


def _chosen(sets: Sequence[str] | None) -> list[str]:
    if not sets:
        return list(LLMBAR_SETS)
    out = []
    for name in sets:
        found = [s for s in LLMBAR_SETS if name in (s, _short(s), s.rsplit("/", 1)[-1])]
        if not found:
            raise InputError.one(
                "--set", name, f"no such LLMBar set; use one of {', '.join(LLMBAR_SETS)}"
            )
        out += found
    return out


def llmbar_examples(root: Path, sets: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """LLMBar's pairs as a pairwise set's records: the instruction as input, the two outputs,
    the gold label; tagged with the set and its group (natural, adversarial, processed)."""
    out = []
    for name in _chosen(sets):
        path = root / "data" / name / "dataset.json"
        items = _json(path)
        group = "natural" if name.endswith("Natural") else name.split("/")[-2].lower()
        with _reading(path, "a list of {input, output_1, output_2, label}"):
            out += _llmbar_pairs(name, group, items)
    return out


def _llmbar_pairs(name: str, group: str, items: Any) -> list[dict[str, Any]]:
    out = []
    for idx, item in enumerate(items):
        out.append(
            {
                "id": f"{_short(name)}-{idx}",
                "input": item["input"],
                "output_a": item["output_1"],
                "output_b": item["output_2"],
                "label": winner(item["label"]),
                "tags": [_short(name), group],
                "made_by": "human",
            }
        )
    return out


def llmbar_verdicts(
    root: Path, criterion: str, sets: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Every LLMBar judge set-up's verdicts on the chosen sets, in both orders: one record per
    pair and set-up (`candidate`: `<llm>/<strategy>`)."""
    chosen = set(_chosen(sets))
    path = root / "verdicts.csv"
    rows = list(csv.DictReader(io.StringIO(read_text(path), newline="")))
    shape = "LLMBar's verdicts.csv (set, idx, llm, strategy, winner_order_AB, winner_order_BA)"
    with _reading(path, shape):
        return _llmbar_records(rows, chosen, criterion)


def _llmbar_records(
    rows: list[dict[str, Any]], chosen: set[str], criterion: str
) -> list[dict[str, Any]]:
    return [
        {
            "criterion": criterion,
            "candidate": f"{row['llm']}/{row['strategy']}",
            "id": f"{_short(row['set'])}-{row['idx']}",
            "a_first": winner(row["winner_order_AB"]) or "",
            "b_first": winner(row["winner_order_BA"]) or "",
        }
        for row in rows
        if row["set"] in chosen
    ]


def _text(value: Any) -> str:
    """A published reply as text (a bare number, as some are published, is the reply's text)."""
    return "" if value is None else str(value)


def _pandalm_input(item: dict[str, Any]) -> str:
    extra = str(item.get("input") or "").strip()
    return str(item["instruction"]) + (f"\n\n{extra}" if extra else "")


def pandalm_examples(root: Path) -> list[dict[str, Any]]:
    """PandaLM's test set: every pair with its three annotators' labels (their plurality is the
    label; a pair the three split three ways is left out, said by the count)."""
    path = root / "testset-v1.json"
    with _reading(path, "PandaLM's test set (idx, instruction, response1, response2, annotators)"):
        return _pandalm_pairs(_json(path))


def _pandalm_pairs(items: Any) -> list[dict[str, Any]]:
    out = []
    for item in items:
        labels = {f"annotator{k}": winner(item[f"annotator{k}"]) for k in (1, 2, 3)}
        if len(set(labels.values())) == 3:
            continue  # no plurality: a, b and tie once each
        out.append(
            {
                "id": str(item["idx"]),
                "input": _pandalm_input(item),
                "output_a": _text(item["response1"]),
                "output_b": _text(item["response2"]),
                "labels": labels,
                "tags": [str(item.get("motivation_app") or "other")],
                "made_by": "human",
            }
        )
    return out


def pandalm_verdicts(root: Path, criterion: str) -> list[dict[str, Any]]:
    """PandaLM's two judges' verdicts, asked with response 1 first only: `b_first` empty."""
    out = []
    for judge, field in PANDALM_JUDGES.items():
        path = root / f"{judge}-testset-v1.json"
        items = _json(path)
        with _reading(path, f"PandaLM's {judge} verdicts (idx, {field})"):
            out += _pandalm_verdicts(items, judge, field, criterion)
    return out


def _pandalm_verdicts(items: Any, judge: str, field: str, criterion: str) -> list[dict[str, Any]]:
    return [
        {
            "criterion": criterion,
            "candidate": judge,
            "id": str(item["idx"]),
            "a_first": winner(item[field]) or "",
            "b_first": "",
        }
        for item in items
    ]


def write_records(path: Path, records: Iterable[dict[str, Any]]) -> int:
    """Records as JSON Lines (`.jsonl`) or CSV (`.csv`, the keys of the first as columns), the
    whole file or nothing (judgekit.inputs.files.write_atomic)."""
    rows = list(records)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(rows[0]) if rows else ["id"])
        writer.writeheader()
        writer.writerows(rows)
        write_atomic(path, out.getvalue())
    else:
        write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return len(rows)
