"""`judgekit probe`: can a criterion's judge be talked into a verdict? (judgekit.watch.robustness)
A command of its own, so that the other watching commands do not load the pipeline to start."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from judgekit.cli.app import fail, interrupted, say, say_json, short
from judgekit.cli.options import (
    api_base_option,
    cache_dir_option,
    concurrency_option,
    config_option,
    criteria_option,
    criterion_ids_option,
    group,
    history_option,
    no_cache_option,
    report_option,
    sets_option,
    timeout_option,
    typer_app,
)
from judgekit.errors import JudgekitError
from judgekit.gate.identity import measured_setups
from judgekit.gate.result import EXIT_CODES, worst
from judgekit.inputs.policy import Policy
from judgekit.judging.probes import probes_named
from judgekit.pipeline import Options
from judgekit.watch.findings import changed_at, findings_of
from judgekit.watch.robustness import probe as run_probes

app = typer_app()


@app.command("probe", short_help=short("probe"))
def probe(
    criterion: list[str] | None = criterion_ids_option("Probe only this criterion (repeatable)."),
    probes: list[str] | None = typer.Option(
        None,
        "--probe",
        help="A probe to try (repeatable): addressed, answer_format, authority, delimiter, "
        "padding (default: all but padding, which only a criterion whose label does not depend "
        "on length may use).",
    ),
    max_flip: float | None = typer.Option(
        None,
        min=0.0,
        max=1.0,
        help="Exit 0 only when every probe's flip rate is certainly under this (the 95% "
        "interval's upper bound), 1 when one is certainly at or over it, 3 when too few "
        "replies tell.",
    ),
    criteria: Path = criteria_option(),
    sets: Path = sets_option(),
    model: str | None = typer.Option(None, help="Judge model for every criterion probed."),
    api_base: str | None = api_base_option(),
    concurrency: int = concurrency_option(),
    cache_dir: Path = cache_dir_option(),
    no_cache: bool = no_cache_option(),
    timeout: float = timeout_option(),
    history: str | None = history_option(
        "Calibration history: a recheck's finding that a judge changed makes its older cached "
        "answers no evidence here either."
    ),
    config: Path | None = config_option(),
    report: Path = report_option(
        "The calibration report whose judges are probed (their model, transport, structured "
        "answers and trials), while each is its criterion's judge."
    ),
    as_json: bool = typer.Option(False, "--json", help="The results as JSON."),
) -> None:
    """Can the judge be talked into a verdict? Rewrite each labelled reply it gets right with text
    that pushes towards the wrong verdict (keeping the label) and judge it again: per probe, the
    share of verdicts bought, with its 95% interval. Exit 0 (or PASS), 1 FAIL, 3 INCONCLUSIVE
    against --max-flip; 2 bad input; 4 the judge could not be run."""
    options = Options(
        criteria_dir=criteria,
        sets_dir=sets,
        criterion_ids=criterion or (),
        model=model,
        api_base=api_base,
        concurrency=concurrency,
        cache_dir=None if no_cache else cache_dir,
        timeout_s=timeout,
    )
    try:
        options.policy = Policy.load(config)  # max_age: older answers are asked again
        options.changed_at = changed_at(findings_of(history, config))
        found = run_probes(
            options,
            probes_named(list(probes or [])),
            max_flip,
            # the judges the report measured, read as the gate reads them (under a key, signed)
            measured=measured_setups(report, options.policy.require_signed_evidence),
        )
    except JudgekitError as error:
        fail(error)
    except KeyboardInterrupt:
        interrupted(cached=not no_cache)
    if as_json:
        say_json(json.dumps({"probes": [r.to_dict() for r in found]}, indent=2))
    else:
        say("\n\n".join(r.text() for r in found))
    statuses = [r.status for r in found if r.status is not None]
    raise typer.Exit(EXIT_CODES[worst(statuses)] if statuses else 0)


commands = group(app)
