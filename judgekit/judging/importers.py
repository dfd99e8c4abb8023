"""Importers: recorded verdicts from where judges already run, as a verdict file judgekit reads.

    judgekit import promptfoo results.json -o verdicts.jsonl --criterion says-blocked
    judgekit import inspect logs/2026-...eval -o verdicts.jsonl --scorer includes
    judgekit import pydantic-evals report.json -o verdicts.jsonl --evaluator SaysBlocked
    judgekit import deepeval .deepeval/.latest_test_run.json -o verdicts.jsonl --metric Correctness
    judgekit import csv judged.csv -o verdicts.jsonl --id-col case --verdict-col grade \\
        --pass-values 1 --fail-values 2

Each becomes `{"criterion", "id", "trial", "passed", "reason"}` records; a result that is not a
pass/fail (an error, a partial score, a missing assertion) is an abstention with its reason,
never a guess. Ids must match the calibration set's ids (`--id-field` picks which field of a
promptfoo test or inspect sample holds it). The readers of each format's results are shared with
judgekit.judging.unlabelled, which turns them into examples to label instead.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from judgekit.errors import InputError, Problem
from judgekit.inputs import files
from judgekit.inputs.files import check_regular, parse_bool, read_csv, read_text
from judgekit.inputs.parsing import parse_json
from judgekit.judging.recorded import RecordedVerdict

FORMATS = ("promptfoo", "inspect", "pydantic-evals", "deepeval", "csv")


def _json(path: Path) -> Any:
    return parse_json(read_text(path), path)


def _record(
    criterion: str | None, example_id: Any, passed: bool | None, reason: str | None, trial: int = 0
) -> RecordedVerdict:
    return RecordedVerdict.model_construct(
        criterion=criterion, id=str(example_id), trial=trial, passed=passed, reason=reason
    )


def _pick(name: str, options: Iterable[str], chosen: str | None, path: Path, flag: str) -> str:
    options = sorted(set(options))
    if chosen is not None:
        if chosen not in options:
            raise InputError.one(
                path, flag, f"no {name} {chosen!r} here; found: {', '.join(options) or 'none'}"
            )
        return chosen
    if len(options) != 1:
        raise InputError.one(
            path,
            flag,
            f"{len(options)} {name}s here ({', '.join(options) or 'none'}); choose one with {flag}",
        )
    return options[0]


def promptfoo(
    path: Path,
    criterion: str | None,
    id_field: str | None = None,
    assertion: str | None = None,
    **_: Any,
) -> list[RecordedVerdict]:
    """`promptfoo eval -o results.json`: one verdict per test result — its overall `success`, or
    with `assertion` the one assertion of that metric name or type (an llm-rubric among latency
    and cost checks, say); the id is the test's `vars[id_field]`, else its description, else its
    index."""
    out = []
    for row, example_id, trial in promptfoo_rows(path, id_field):
        grading = row.get("gradingResult") or {}
        # failureReason 2: the provider failed, not an assertion.
        error = row.get("error") if row.get("failureReason") == 2 else None
        passed, reason = (
            (None if error or not isinstance(row.get("success"), bool) else row["success"]),
            error or grading.get("reason"),
        )
        if assertion is not None and not error:
            parts = [
                c
                for c in grading.get("componentResults") or []
                if assertion
                in (
                    (c.get("assertion") or {}).get("metric"),
                    (c.get("assertion") or {}).get("type"),
                )
            ]
            if len(parts) != 1:
                raise InputError.one(
                    path,
                    f"test {row.get('testIdx')}",
                    f"has {len(parts)} assertions named "
                    f"{assertion!r} (by metric or type); name one that each test has once",
                )
            passed = parts[0].get("pass") if isinstance(parts[0].get("pass"), bool) else None
            reason = parts[0].get("reason")
        out.append(_record(criterion, example_id, passed, reason, trial))
    return out


def promptfoo_rows(
    path: Path, id_field: str | None = None
) -> list[tuple[dict[str, Any], str, int]]:
    """Each result of `promptfoo eval -o results.json`, its example id (the test's `vars[id_field]`,
    else its description, else its index) and trial (`--repeat n` writes a test n times)."""
    data = _json(path)
    results = data.get("results", {}) if isinstance(data, dict) else {}
    rows = results.get("results") if isinstance(results, dict) else None
    if not isinstance(rows, list):
        raise InputError.one(
            path, "results.results", "is not a promptfoo results file (`promptfoo eval -o x.json`)"
        )
    out: list[tuple[dict[str, Any], str, int]] = []
    seen: dict[str, int] = {}
    for row in rows:
        test = row.get("testCase") or {}
        vars_ = row.get("vars") or test.get("vars") or {}
        if id_field and id_field not in vars_:
            raise InputError.one(
                path, f"test {row.get('testIdx')}", f"has no var {id_field!r} (--id-field)"
            )
        example_id = vars_[id_field] if id_field else test.get("description")
        example_id = str(row.get("testIdx") if example_id is None else example_id)
        seen[example_id] = seen.get(example_id, 0) + 1
        out.append((row, example_id, seen[example_id] - 1))
    return out


def inspect_samples(
    path: Path, id_field: str | None = None
) -> list[tuple[dict[str, Any], str, int]]:
    """Each sample of an inspect_ai log, its example id (its id, or `metadata[id_field]`) and trial
    (epoch n is trial n - 1)."""
    samples = _inspect_samples(path)
    if not all(isinstance(s, dict) for s in samples):
        raise InputError.one(path, "samples", "holds something that is not a sample object")
    out = []
    for sample in samples:
        if id_field and id_field not in (sample.get("metadata") or {}):
            raise InputError.one(
                path, f"sample {sample.get('id')}", f"has no metadata {id_field!r} (--id-field)"
            )
        example_id = (sample.get("metadata") or {})[id_field] if id_field else sample.get("id")
        out.append((sample, str(example_id), int(sample.get("epoch", 1)) - 1))
    return out


def _inspect_samples(path: Path) -> list[dict[str, Any]]:
    check_regular(path)  # opened as a zip first: a FIFO would hang it
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            members = [
                i
                for i in archive.infolist()
                if i.filename.startswith("samples/") and i.filename.endswith(".json")
            ]
            return [
                parse_json(_member(path, archive, info).decode("utf-8"), f"{path}:{info.filename}")
                for info in members
            ]
    data = _json(path)
    samples = data.get("samples") if isinstance(data, dict) else None
    if not isinstance(samples, list):
        raise InputError.one(
            path, "samples", "is not an inspect_ai log with samples (.eval or .json)"
        )
    return samples


ZSTD = 93  # the zip compression method of inspect's .eval logs, which Python's zipfile cannot read


def _member(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """A member of an .eval log, decompressed, at most WHOLE_MAX bytes: its header's size is the
    writer's word, so the bytes are counted as they come (a zip bomb is refused, never held)."""
    if info.file_size > files.WHOLE_MAX:
        raise _member_too_large(path, info)
    if info.compress_type != ZSTD:
        with archive.open(info) as member:
            return _bounded(path, info, member)
    try:
        import zstandard
    except ImportError:
        raise InputError.one(
            path,
            info.filename,
            "is zstd-compressed; pip install zstandard, or convert the log "
            "with `inspect log convert --to json`",
        ) from None
    with open(path, "rb") as handle:  # the member's raw bytes follow its local header
        handle.seek(info.header_offset)
        header = handle.read(30)
        handle.seek(
            info.header_offset
            + 30
            + int.from_bytes(header[26:28], "little")
            + int.from_bytes(header[28:30], "little")
        )
        raw = handle.read(info.compress_size)
    with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw)) as member:
        return _bounded(path, info, member)


def _bounded(path: Path, info: zipfile.ZipInfo, member: IO[bytes]) -> bytes:
    """The member's bytes, read until its end or past WHOLE_MAX, which is refused."""
    chunks, size = [], 0
    while chunk := member.read(1 << 20):
        chunks.append(chunk)
        size += len(chunk)
        if size > files.WHOLE_MAX:
            raise _member_too_large(path, info)
    return b"".join(chunks)


def _member_too_large(path: Path, info: zipfile.ZipInfo) -> InputError:
    return InputError.one(
        path,
        info.filename,
        f"decompresses to more than the {files.WHOLE_MAX / 1e6:.0f} MB judgekit reads whole; "
        "convert the log with `inspect log convert --to json`, or split it",
    )


# inspect's CORRECT / INCORRECT; P (partial) and N (no answer) abstain.
_INSPECT = {"C": True, "I": False}


def inspect(
    path: Path,
    criterion: str | None,
    scorer: str | None = None,
    id_field: str | None = None,
    **_: Any,
) -> list[RecordedVerdict]:
    """An inspect_ai log (`.eval` or `.json`): one verdict per sample and epoch (epoch n is trial
    n - 1) from one scorer's value: C / I, true / false, 1 / 0."""
    samples = inspect_samples(path, id_field)
    name = _pick(
        "scorer",
        {k for s, _, _ in samples for k in (s.get("scores") or {})},
        scorer,
        path,
        "--scorer",
    )
    out = []
    for sample, example_id, trial in samples:
        score = (sample.get("scores") or {}).get(name)
        if sample.get("error") or score is None:
            reason = (
                (sample.get("error") or {}).get("message")
                if sample.get("error")
                else f"no {name} score"
            )
            out.append(_record(criterion, example_id, None, reason, trial))
            continue
        value = score.get("value")
        passed = (
            _INSPECT.get(value)
            if isinstance(value, str)
            else (
                value
                if isinstance(value, bool)
                else {1: True, 0: False}.get(value)
                if value in (0, 1)
                else None
            )
        )
        reason = (
            score.get("explanation")
            if passed is not None
            else f"score {value!r} is not pass or fail"
        )
        out.append(_record(criterion, example_id, passed, reason, trial))
    return out


def pydantic_evals(
    path: Path, criterion: str | None, evaluator: str | None = None, **_: Any
) -> list[RecordedVerdict]:
    """A pydantic-evals report (`EvaluationReportAdapter.dump_json(report)`): one verdict per case
    from one boolean assertion; a failed case (the task raised) abstains."""
    data, cases = pydantic_cases(path)
    name = _pick(
        "assertion",
        {k for c in cases for k in (c.get("assertions") or {})},
        evaluator,
        path,
        "--evaluator",
    )
    out = []
    for case in cases:
        example_id, trial = case_and_trial(case)
        result = (case.get("assertions") or {}).get(name)
        if result is None or not isinstance(result.get("value"), bool):
            out.append(_record(criterion, example_id, None, f"no boolean {name} result", trial))
        else:
            out.append(_record(criterion, example_id, result["value"], result.get("reason"), trial))
    out += [
        _record(
            criterion, failure.get("name"), None, f"the task failed: {failure.get('error_message')}"
        )
        for failure in data.get("failures") or []
    ]
    return out


def pydantic_cases(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A pydantic-evals report and its cases."""
    data = _json(path)
    cases = data.get("cases") if isinstance(data, dict) else None
    if not isinstance(cases, list):
        raise InputError.one(
            path, "cases", "is not a pydantic-evals report (EvaluationReportAdapter.dump_json)"
        )
    return data, cases


def case_and_trial(case: dict[str, Any]) -> tuple[str, int]:
    """A repeated case is named `name [k/n]` (with `source_case_name`): run k is trial k - 1."""
    import re

    name = str(case.get("name"))
    found = re.fullmatch(r"(.*) \[(\d+)/(\d+)\]", name)
    if found:
        return str(case.get("source_case_name") or found.group(1)), int(found.group(2)) - 1
    return name, 0


def deepeval(
    path: Path, criterion: str | None, metric: str | None = None, **_: Any
) -> list[RecordedVerdict]:
    """A DeepEval test run (`.deepeval/.latest_test_run.json`): one verdict per test case from one
    metric's `success`; a metric that errored abstains."""
    cases = deepeval_cases(path)
    name = _pick(
        "metric",
        {m["name"] for c in cases for m in c.get("metricsData") or [] if m.get("name")},
        metric,
        path,
        "--metric",
    )
    out = []
    for case in cases:
        found = next((m for m in case.get("metricsData") or [] if m.get("name") == name), None)
        if found is None or found.get("error") or not isinstance(found.get("success"), bool):
            reason = (found or {}).get("error") or f"no {name} result"
            out.append(_record(criterion, case.get("name"), None, reason))
        else:
            out.append(_record(criterion, case.get("name"), found["success"], found.get("reason")))
    return out


def deepeval_cases(path: Path) -> list[dict[str, Any]]:
    """The test cases of a DeepEval test run."""
    data = _json(path)
    run = (data.get("testRunData") or data.get("testRun") or data) if isinstance(data, dict) else {}
    cases = run.get("testCases") if isinstance(run, dict) else None
    if not isinstance(cases, list):
        raise InputError.one(
            path, "testCases", "is not a DeepEval test run (.deepeval/.latest_test_run.json)"
        )
    return cases


def _values(given: str | Iterable[str] | None) -> set[str]:
    """Cell values as given (a list, each item possibly comma-separated), compared without case."""
    items = [given] if isinstance(given, str) else list(given or [])
    return {v.strip().casefold() for item in items for v in item.split(",") if v.strip()}


def csv_file(  # noqa: PLR0913 -- a keyword per `judgekit import csv` option (import_verdicts)
    path: Path,
    criterion: str | None,
    id_col: str = "id",
    verdict_col: str = "passed",
    reason_col: str | None = None,
    criterion_col: str | None = None,
    pass_values: str | Iterable[str] | None = None,
    fail_values: str | Iterable[str] | None = None,
    **_: Any,
) -> list[RecordedVerdict]:
    """A plain CSV: the columns holding the id and the verdict (true / false / pass / fail / 1 / 0,
    or with `pass_values` and `fail_values` exactly those, e.g. 1 and 2; empty: an abstention), and
    optionally a reason and a criterion column. The message lists the first 10 bad cells."""
    passes, fails = _values(pass_values), _values(fail_values)
    if bool(passes) != bool(fails):
        raise InputError.one(
            path,
            "--pass-values / --fail-values",
            "give both: the values read as pass and those "
            "read as fail (any other value is an error, never a guess)",
        )
    if passes & fails:
        raise InputError.one(
            path,
            "--pass-values / --fail-values",
            f"{', '.join(sorted(passes & fails))} is given "
            "as both a pass and a fail value; give it once",
        )
    accepted = (
        f"the values read are {', '.join(sorted(passes))} (pass) and "
        f"{', '.join(sorted(fails))} (fail): add "
        "it to --pass-values or --fail-values"
        if passes
        else "write true / false (pass / fail, 1 / 0), or "
        "map your own values with --pass-values and --fail-values"
    ) + ", or leave it empty for an abstention"
    columns, rows = read_csv(path)
    missing = [
        c for c in (id_col, verdict_col, reason_col, criterion_col) if c and c not in columns
    ]
    if missing:
        raise InputError.one(
            path, ", ".join(missing), f"no such column; the columns are {', '.join(columns)}"
        )
    out, problems = [], []
    for number, row in enumerate(rows, start=1):
        cell = row[verdict_col]
        key = (cell or "").strip().casefold()
        passed = (
            None
            if not key
            else ((key in passes) if key in passes | fails else cell)
            if passes
            else parse_bool(cell)
        )
        if passed is not None and not isinstance(passed, bool):
            shown = cell if len(cell) <= 60 else cell[:57] + "..."
            problems.append(
                Problem(str(path), f"data row {number}", f"{verdict_col} is {shown!r}; {accepted}")
            )
            continue
        out.append(
            _record(
                row[criterion_col] if criterion_col else criterion,
                row[id_col],
                passed,
                row[reason_col] if reason_col else None,
            )
        )
    if problems:
        raise InputError(problems, shown=10)
    return out


IMPORTERS: dict[str, Callable[..., list[RecordedVerdict]]] = {
    "promptfoo": promptfoo,
    "inspect": inspect,
    "pydantic-evals": pydantic_evals,
    "deepeval": deepeval,
    "csv": csv_file,
}


def import_verdicts(
    kind: str, path: Path, criterion: str | None = None, **options: Any
) -> list[RecordedVerdict]:
    """Another tool's results read as recorded verdicts; a repeated (id, trial) pair is an error."""
    if kind not in IMPORTERS:
        raise InputError.one(kind, "", f"unknown format; use one of {', '.join(FORMATS)}")
    if not path.exists():
        raise InputError.one(path, "", "no such file")
    check_regular(path)
    try:
        records = IMPORTERS[kind](path, criterion, **options)
    except (
        AttributeError,
        TypeError,
        ValueError,
        KeyError,
        IndexError,
        zipfile.BadZipFile,
    ) as error:
        raise InputError.one(
            path,
            "",
            f"is not a {kind} results file judgekit can read ({type(error).__name__}: "
            f"{error}); check the format named, or export the file again",
        ) from None
    seen: dict[tuple[str | None, str, int], int] = {}
    for r in records:
        key = (r.criterion, r.id, r.trial)
        seen[key] = seen.get(key, 0) + 1
    twice = [f"{i} (trial {t})" for (_, i, t), n in seen.items() if n > 1]
    if twice:
        raise InputError.one(
            path,
            "ids",
            f"{len(twice)} id(s) appear more than once: {', '.join(twice[:10])}; "
            "give each example its own id (--id-field / --id-col)",
        )
    if not records:
        raise InputError.one(path, "", "holds no results")
    return records
