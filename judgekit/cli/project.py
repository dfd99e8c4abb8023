"""Starting and feeding a project: `judgekit init` scaffolds it, `judgekit import` turns another
tool's judge results into a verdict file, or its examples into unlabelled ones to label.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from judgekit.cli.app import fail, say, short
from judgekit.cli.options import group, typer_app
from judgekit.cli.scaffold import init as scaffold
from judgekit.errors import InputError, JudgekitError
from judgekit.inputs.files import csv_line, write_atomic
from judgekit.judging.importers import import_verdicts
from judgekit.judging.observability import SAMPLE_IMPORTERS
from judgekit.judging.pair_import import (
    PAIR_FORMATS,
    llmbar_examples,
    llmbar_verdicts,
    pandalm_examples,
    pandalm_verdicts,
    write_records,
)
from judgekit.judging.unlabelled import import_examples

app = typer_app()

# An option `judgekit import` passes on to a format's importer: a name, or csv's verdict cells.
ImporterOption = str | list[str] | None


@app.command("init", short_help=short("init"))
def init(
    root: Path = typer.Argument(Path("."), help="The project folder."),
    force: bool = typer.Option(False, "--force", help="Overwrite files that exist."),
    ci: str = typer.Option(
        "github",
        "--ci",
        help="The CI recipe: github (.github/workflows/judgekit.yml) or gitlab (.gitlab-ci.yml).",
    ),
) -> None:
    """Start a project: criteria, calibration sets, judgekit.yaml, a CI recipe (GitHub Actions or
    GitLab CI: calibrate and gate, keep the answers and the history, recheck daily), a .gitignore
    for what runs write under .judgekit/, and a pytest example."""
    try:
        written = scaffold(root, force, ci)
    except JudgekitError as error:
        fail(error)
    for path in written:
        say(f"wrote {path}")
    say(
        "next: `judgekit calibrate -c no-email-address --gate` runs as written; set judge.model in "
        "criteria/confirms-refund.yaml (and its key in the environment) to calibrate the LLM judge"
    )
    say(
        "commit all of these; .judgekit/.gitignore keeps out what runs write there "
        "(cached answers, the history, reports), which CI keeps in its own cache"
    )


@app.command("import", short_help=short("import"))
def import_(
    format: str = typer.Argument(
        ...,
        help="promptfoo, inspect, pydantic-evals, deepeval, csv; llmbar, pandalm (pairwise: a "
        "folder of their published data); or traces, with "
        "--examples or --samples: otel (OpenTelemetry, OTLP JSON), langfuse (the public "
        "API's JSON of observations, scores or traces), phoenix (the spans or span "
        "evaluations dataframe as JSONL, JSON or Parquet).",
    ),
    file: Path = typer.Argument(..., help="The other tool's results file."),
    out: Path = typer.Option(
        ...,
        "--out",
        "-o",
        help="Verdict file to write (JSONL), for `calibrate --verdicts`; "
        "with --examples, the file of unlabelled examples (JSONL or CSV) to label.",
    ),
    examples: bool = typer.Option(
        False,
        "--examples",
        help="Write the results' examples (id, input, output, "
        "context) unlabelled, to label with `judgekit label OUT`, instead of verdicts.",
    ),
    samples: bool = typer.Option(
        False,
        "--samples",
        help="otel, langfuse, phoenix: write the evaluations the traces "
        "carry (otel: gen_ai.evaluation.result events; langfuse: scores; phoenix: span "
        "evaluations) as judged samples (timestamp, criterion, passed, trace_id) for "
        "`judgekit monitor`.",
    ),
    criterion: str | None = typer.Option(
        None, "--criterion", "-c", help="The criterion these verdicts are for."
    ),
    scorer: str | None = typer.Option(None, help="inspect: the scorer whose values are verdicts."),
    evaluator: str | None = typer.Option(
        None, help="pydantic-evals: the boolean assertion to use."
    ),
    metric: str | None = typer.Option(
        None, help="deepeval: the metric whose success is the verdict."
    ),
    assertion: str | None = typer.Option(
        None,
        help="promptfoo: use this assertion (metric name or type) "
        "instead of the test's overall success.",
    ),
    id_field: str | None = typer.Option(
        None,
        help="promptfoo: the test var holding the example id; inspect: the sample metadata key.",
    ),
    input_var: str | None = typer.Option(
        None,
        help="promptfoo, with --examples: the test var holding the "
        "input (default: the prompt as sent).",
    ),
    id_col: str = typer.Option("id", help="csv: the column of example ids."),
    verdict_col: str = typer.Option("passed", help="csv: the column of verdicts."),
    reason_col: str | None = typer.Option(None, help="csv: a column of reasons."),
    criterion_col: str | None = typer.Option(None, help="csv: a column of criterion ids."),
    pass_values: list[str] | None = typer.Option(
        None,
        help="csv: the verdict cells that mean pass (repeatable or "
        "comma-separated, e.g. 1); with --fail-values, only these two "
        "sets are read.",
    ),
    fail_values: list[str] | None = typer.Option(
        None, help="csv: the verdict cells that mean fail (e.g. 2)."
    ),
    pair_sets: list[str] | None = typer.Option(
        None,
        "--set",
        help="llmbar: the sets to read (repeatable; e.g. Natural, Neighbor; default: all).",
    ),
) -> None:
    """Turn another tool's judge results into a verdict file (`judgekit calibrate --verdicts
    OUT`), or with --examples into unlabelled examples to label (`judgekit label OUT`)."""
    # Each format's own options, passed on to its importer by name.
    by_format: dict[str, dict[str, ImporterOption]] = {
        "promptfoo": {"id_field": id_field, "assertion": assertion, "input_var": input_var},
        "inspect": {"scorer": scorer, "id_field": id_field},
        "pydantic-evals": {"evaluator": evaluator},
        "deepeval": {"metric": metric},
        "csv": {
            "id_col": id_col,
            "verdict_col": verdict_col,
            "reason_col": reason_col,
            "criterion_col": criterion_col,
            "pass_values": pass_values,
            "fail_values": fail_values,
        },
    }
    options = by_format.get(format, {})
    if format in PAIR_FORMATS:
        return _pairs(format, file, out, examples, criterion, pair_sets)
    try:
        if samples or (format in SAMPLE_IMPORTERS and not examples):
            return _samples(format, file, out, samples)
        if examples:
            return _examples(
                format,
                file,
                out,
                {k: v for k, v in options.items() if k in ("id_field", "input_var")},
            )
        records = import_verdicts(format, file, criterion, **options)
        write_atomic(out, "".join(r.line() for r in records))
    except JudgekitError as error:
        fail(error)
    decided = sum(1 for r in records if r.passed is not None)
    say(
        f"wrote {len(records)} verdicts ({decided} decided, {len(records) - decided} abstained) "
        f"to {out}"
    )


def _pairs(
    format: str,
    folder: Path,
    out: Path,
    examples: bool,
    criterion: str | None,
    sets: list[str] | None,
) -> None:
    """`judgekit import llmbar|pandalm FOLDER -o OUT`: the published pairs as a labelled pairwise
    set (`--examples`), or every judge's verdicts in both orders (a `candidate` each), for
    `judgekit compare -c CRITERION --verdicts OUT`."""
    try:
        if not folder.is_dir():
            raise InputError.one(folder, "", f"is not a folder of {format}'s published data")
        if examples:
            records = (
                llmbar_examples(folder, sets) if format == "llmbar" else pandalm_examples(folder)
            )
            write_records(out, records)
            say(f"wrote {len(records)} labelled pair(s) to {out}")
            return
        if criterion is None:
            raise InputError.one(
                "judgekit import",
                "--criterion",
                "name the pairwise criterion these verdicts are of",
            )
        records = (
            llmbar_verdicts(folder, criterion, sets)
            if format == "llmbar"
            else pandalm_verdicts(folder, criterion)
        )
        write_records(out, records)
    except JudgekitError as error:
        fail(error)
    judges = len({r["candidate"] for r in records})
    unread = sum(1 for r in records for order in ("a_first", "b_first") if not r[order])
    say(
        f"wrote {len(records)} pairwise verdict(s) of {judges} judge(s) to {out} "
        f"({unread} answer(s) without a winner: unparseable, or not asked in that order)"
    )


def _samples(format: str, file: Path, out: Path, asked: bool) -> None:
    """`judgekit import otel|langfuse|phoenix FILE --samples -o OUT`: the evaluations the traces
    carry, for monitor."""
    if format not in SAMPLE_IMPORTERS or not asked:
        raise InputError.one(
            "judgekit import",
            format,
            f"--samples reads traces ({', '.join(SAMPLE_IMPORTERS)}); "
            "traces give --examples (replies to label) or --samples (judged samples), not verdicts",
        )
    if not file.is_file():
        raise InputError.one(file, "", "no such file")
    read, lacking = SAMPLE_IMPORTERS[format]
    judged = read(file)
    if not judged.samples:
        raise InputError.one(
            file,
            "",
            f"holds no {lacking}"
            + (
                f" ({len(judged.skipped)} evaluation(s) say no "
                f"verdict: {', '.join(judged.skipped[:5])})"
                if judged.skipped
                else ""
            ),
        )
    write_atomic(out, "".join(json.dumps(s, ensure_ascii=True) + "\n" for s in judged.samples))
    decided = sum(1 for s in judged.samples if s["passed"] is not None)
    say(f"wrote {len(judged.samples)} judged sample(s) ({decided} decided) to {out}")
    if judged.skipped:
        say(
            f"skipped {len(judged.skipped)} evaluation(s) that say no pass or fail: "
            f"{', '.join(judged.skipped)}"
        )
    say(f"next: judgekit monitor {out}")


def _examples(format: str, file: Path, out: Path, options: dict[str, ImporterOption]) -> None:
    """`judgekit import FORMAT FILE --examples -o OUT`: never over a file that may hold labels."""
    if out.suffix.lower() not in (".jsonl", ".csv"):
        raise InputError.one(
            out,
            "",
            "write unlabelled examples to a .jsonl or .csv file (what `judgekit label` reads)",
        )
    if out.exists():
        raise InputError.one(
            out, "", "exists, and may hold labels; choose another -o, or remove it first"
        )
    read = import_examples(format, file, **options)
    if out.suffix.lower() == ".csv":
        columns = ["id", "input", "output", "context"]
        write_atomic(
            out,
            "".join(
                [csv_line(columns)]
                + [csv_line(e.get(c, "") for c in columns) for e in read.examples]
            ),
        )
    else:
        write_atomic(out, "".join(json.dumps(e, ensure_ascii=True) + "\n" for e in read.examples))
    say(f"wrote {len(read.examples)} unlabelled example(s) to {out}")
    if read.skipped:
        say(
            f"skipped {len(read.skipped)} result(s) without a reply to label: "
            f"{', '.join(read.skipped)}"
        )
    say(f"next: judgekit label {out} -c CRITERION, then judgekit label --merge {out} -c CRITERION")


commands = group(app)
