"""The commands of calibrating before a release: `calibrate`, `validate`, `plan` (the label budget)
and `schema`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import typer

from judgekit.cli.app import EXIT_INPUT, check_split, fail, interrupted, say, say_json, short
from judgekit.cli.gate import decide, finish
from judgekit.cli.html import write_html
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
from judgekit.cli.terminal import render_estimates, render_table, terminal_progress
from judgekit.errors import InputError, JudgekitError
from judgekit.gate.decision import Gate
from judgekit.gate.label_budget import plan as make_plan
from judgekit.inputs.catalog import criterion_files, unknown_criteria
from judgekit.inputs.criteria import criterion_schema
from judgekit.inputs.files import write_atomic
from judgekit.inputs.label_reader import LabelledSet, labels_of
from judgekit.inputs.policy import Policy
from judgekit.inputs.project import load_inputs
from judgekit.inputs.sets import Example
from judgekit.judging.jobs import run_sync
from judgekit.judging.recorded import load_recorded
from judgekit.pipeline import Options, copies_said, dry_run
from judgekit.report.model import Report
from judgekit.report.pair_render import pair_terminal
from judgekit.report.parts import check_drawn
from judgekit.report.render import probes_said
from judgekit.stats.sequential import RULES
from judgekit.watch.calibration import acalibrate_read
from judgekit.watch.findings import findings_of, read_findings
from judgekit.watch.history import History, HistoryRun
from judgekit.watch.store import locate

app = typer_app()

# How a refused run on test-split examples is recorded, in the command's own flags.
NO_HISTORY_FIX = "keep the history (drop --no-history), or calibrate the dev split (--split dev)"


@app.command("calibrate", short_help=short("calibrate"))
def calibrate(
    criteria: Path = criteria_option(),
    sets: Path = sets_option(),
    criterion: list[str] | None = criterion_ids_option(
        "Calibrate only this criterion (repeatable)."
    ),
    verdicts: Path | None = typer.Option(
        None, help="Recorded verdicts (JSONL or CSV) instead of calling a model."
    ),
    model: str | None = typer.Option(
        None,
        help="Judge model for every LLM criterion, e.g. openai/gpt-4o-mini, "
        "anthropic/claude-3-5-haiku-latest, local/smollm2. With --verdicts: the "
        "model that produced them, recorded in the report for the gate.",
    ),
    api_base: str | None = api_base_option(),
    concurrency: int = concurrency_option(),
    trials: int | None = typer.Option(
        None, min=1, max=100, help="Ask each example K times (overrides judge.trials)."
    ),
    out: Path = typer.Option(
        Path(".judgekit/reports/latest"), help="Where report.json and report.md are written."
    ),
    cache_dir: Path = cache_dir_option(),
    no_cache: bool = no_cache_option(),
    refresh: bool = typer.Option(
        False,
        "--refresh",
        help="Ask every answer again and replace the cached one (after a drift: the cached "
        "answers are the old judge's).",
    ),
    timeout: float = timeout_option(),
    split: str | None = typer.Option(None, help="Use only examples of this split (dev or test)."),
    seed: int = typer.Option(0, help="Seed of the bootstrap intervals."),
    plain_answers: bool = typer.Option(
        False, "--plain-answers", help="Do not ask the provider for structured output."
    ),
    stop_early: bool = typer.Option(
        False,
        "--stop-early",
        help="Judge in random order and stop each criterion once the gate's decision is "
        "reached (see --stop-rule).",
    ),
    stop_rule: str = typer.Option(
        "sequential",
        "--stop-rule",
        help="With --stop-early: `sequential` also stops at a quarter, half or three quarters of "
        "the set when the verdicts so far are decisive at z = 3; `exact` stops only once the "
        "whole set's decision can no longer change.",
    ),
    gate: bool = typer.Option(
        False, "--gate", help="Gate the new report too; exit as `judgekit gate` does."
    ),
    config: Path | None = config_option("Gate policy file (judgekit.yaml or pyproject.toml)."),
    junit: Path | None = typer.Option(None, help="With --gate: write the decisions as JUnit XML."),
    via: str = typer.Option(
        "auto",
        help="auto: openai/<model> over the lean OpenAI-compatible path, the rest "
        "through litellm; litellm: everything through litellm.",
    ),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="Print only where the report was written."
    ),
    as_json: bool = typer.Option(
        False,
        "--json",
        help="Print the report as JSON (and, with --gate, the gate's "
        "decisions) instead of tables; nothing else on stdout.",
    ),
    history: str | None = history_option(
        "Calibration history this run is added to, for `judgekit drift`."
    ),
    no_history: bool = typer.Option(
        False, "--no-history", help="Do not add this run to the history."
    ),
    dry: bool = typer.Option(
        False,
        "--dry-run",
        help="Ask nothing, write nothing: per criterion, the calls to "
        "make, the answers already cached, the prompt tokens and the cost at most.",
    ),
) -> None:
    """Run each criterion's judge over its calibration set and report agreement with the labels."""
    check_split(split)
    if stop_rule not in RULES:
        fail(InputError.one("--stop-rule", "", f"{stop_rule!r}: use {' or '.join(RULES)}"))
    if via not in ("auto", "litellm"):
        fail(InputError.one("--via", "", f"{via!r}: use auto or litellm"))
    options = Options(
        criteria_dir=criteria,
        sets_dir=sets,
        criterion_ids=criterion or (),
        verdicts=verdicts,
        model=model,
        api_base=api_base,
        concurrency=concurrency,
        trials=trials,
        cache_dir=None if no_cache else cache_dir,
        timeout_s=timeout,
        split=split,
        seed=seed,
        structured=not plain_answers,
        via=via,
        stop_early=stop_early,
        stop_rule=stop_rule,
        refresh=refresh,
    )
    if dry:
        _show_dry_run(options, config, as_json)
        return
    fresh, report = _judged(options, out, history, no_history, config, quiet or as_json)
    if as_json:
        if gate:
            gated(
                out,
                criteria,
                sets,
                config,
                list(criterion or []),
                junit,
                as_json=True,
                report_json=fresh.model_dump(mode="json"),
                history=history,
            )
        say_json(fresh.model_dump_json(indent=2))
        return
    if not quiet:
        _show_summary(fresh, report, out)
    say(f"report: {out / 'report.json'}")
    # The report as written (another run's newer result included), checked against its verdicts.
    if gate:
        gated(out, criteria, sets, config, list(criterion or []), junit, history=history)


def _show_dry_run(options: Options, config: Path | None, as_json: bool) -> None:
    """`calibrate --dry-run`: per criterion, what a run would ask and cost, asking nothing."""
    try:
        options.policy = Policy.load(config)  # max_age: older answers are asked again
        estimates = dry_run(options)
    except JudgekitError as error:
        fail(error)
    say(
        json.dumps({"dry_run": True, "criteria": [e.to_json() for e in estimates]}, indent=2)
        if as_json
        else render_estimates(estimates, options.stop_early)
    )


def _judged(
    options: Options,
    out: Path,
    history: str | None,
    no_history: bool,
    config: Path | None,
    quiet: bool,
) -> tuple[Report, Report]:
    """Judge, add the run to the history, write the report and its page: (this run, as written)."""
    try:
        if options.criterion_ids and (out / "report.json").is_file():
            # A partial run merges into the report there: check it can be read before judging
            # anything.
            there = Report.read(out / "report.json")
            # a report of pairwise criteria alone holds its verdicts itself: an empty file beside
            if there.criteria and (out / "verdicts.jsonl").is_file():
                load_recorded(out / "verdicts.jsonl")
        located = locate(history, config)
        # as given: a history named must exist to be read, the default one need not yet
        options.history, options.keep_history = history, not no_history
        fresh, read = run_sync(
            acalibrate_read(
                options,
                progress=None if quiet else terminal_progress("judging"),
                config=config,
                replaces=out,
                fix=NO_HISTORY_FIX,
            )
        )
        # Calibrating some criteria keeps the others' results in the same report.
        report = fresh.write(out, merge=bool(options.criterion_ids))
        labels = {cid: labels_of(s) for cid, s in read.items() if s.digest is not None}
        del read  # the examples themselves: the page's gate needs only their labels
        kept = None if no_history else located
        # what rechecks found holds whether or not this run was added to the history
        findings = findings_of(history, config) if kept is None else read_findings(kept)
        _write_page(report, out, options, config, kept, labels, findings)
    except JudgekitError as error:
        fail(error)
    except KeyboardInterrupt:
        interrupted(options.cache_dir is not None)
    return fresh, report


def _write_page(
    report: Report,
    out: Path,
    options: Options,
    config: Path | None,
    history: str | Path | None,
    labels: dict[str, LabelledSet],
    findings: dict[str, dict[str, datetime]],
) -> None:
    """Write report.html, with the gate's decisions if it can be gated and past runs if kept.

    The gate decides on the report as written, with the verdicts and the sets this run holds in
    memory (a million examples are not read again); `judgekit gate` reads them from disk.
    """
    result = None
    # The page shows the gate's decisions when the project can be gated; when it cannot,
    # `judgekit gate` says what is wrong.
    with contextlib.suppress(InputError):
        gate = Gate.from_project(
            options.criteria_dir, options.sets_dir, config, read=labels
        ).with_findings(findings)
        result = gate.check(report, report_path=out / "report.json")
    write_html(
        report,
        out,
        {d.criterion: d for d in result.decisions} if result else None,
        None if history is None else past_runs(history, [c.id for c in report.criteria]),
    )


def _show_summary(fresh: Report, report: Report, out: Path) -> None:
    """The run's table, what the report kept or did not take from it, and its warnings."""
    if fresh.criteria or not fresh.pairwise:
        say(render_table(fresh))
    if fresh.pairwise:
        say(("\n" if fresh.criteria else "") + pair_terminal(fresh.pairwise))
    written = {c.id: c.calibrated_at for c in report.criteria}
    superseded = [c.id for c in fresh.criteria if written.get(c.id) != c.calibrated_at]
    kept = len(report.criteria) - len(fresh.criteria) + len(superseded)
    if kept:
        say(
            f"\n{kept} other {'criterion' if kept == 1 else 'criteria'} kept from the previous "
            f"report in {out}"
        )
    for cid in superseded:
        say(
            f"\n{cid}: a calibration that started after this one is already in {out}; this "
            "run's result for it was not written"
        )
    for c in fresh.criteria:
        if c.probes:
            say(f"\n{probes_said(c)}")
        for warning in c.warnings:
            say(f"\nwarning: {c.id}: {warning}")
        if c.labels_changed:
            say(f"\n{c.id}: {c.labels_changed} label(s) changed since its previous calibration")
    abstained = sum(c.abstained for c in fresh.criteria)
    if abstained:
        say(f"\n{abstained} abstention(s): see the disagreements in {out / 'report.md'}")


def gated(
    out: Path,
    criteria: Path,
    sets: Path,
    config: Path | None,
    criterion_ids: list[str],
    junit: Path | None,
    as_json: bool = False,
    report_json: dict[str, Any] | None = None,
    history: str | None = None,
) -> None:
    """`calibrate --gate`: the gate on the report just written, exiting as `judgekit gate` does
    (heeding the findings of the history the run used)."""
    try:
        result = decide(
            out / "report.json", criteria, sets, config, criterion_ids, junit, history=history
        )
    except JudgekitError as error:
        fail(error)
    finish(result, as_json, report_json)


def past_runs(history: str | Path, criterion_ids: list[str]) -> dict[str, Sequence[HistoryRun]]:
    """Each criterion's calibrations in the history, for the page's chart (none if unreadable)."""
    try:
        with History.open(history, create=False) as db:
            return {cid: db.runs(cid, purpose="calibrate") for cid in criterion_ids}
    except InputError:
        return {}


@app.command("validate", short_help=short("validate"))
def validate(
    criteria: Path = criteria_option(),
    sets: Path = sets_option(),
    verdicts: Path | None = typer.Option(None, help="Also check a recorded-verdicts file."),
) -> None:
    """Check every criterion, calibration set (and verdict file) without running any judge."""
    problems = []  # of every file, listed together
    try:
        loaded, loaded_sets = load_inputs(criteria, sets)
        # Examples drawn from a pool must describe one design.
        for loaded_set in loaded_sets.values():
            try:
                check_drawn(loaded_set)
            except InputError as error:
                problems += error.problems
    except InputError as error:
        problems += error.problems
    if verdicts is not None:
        try:
            load_recorded(verdicts)
        except InputError as error:
            problems += error.problems
    if problems:
        fail(InputError(problems))
    for _cid, loaded_set in sorted(loaded_sets.items()):  # in the order of the criteria's ids
        if loaded_set.copies:
            say(f"note: {loaded_set.path}: {copies_said(loaded_set.copies)}")
        good = sum(e.label for e in loaded_set.examples)
        if good in (0, len(loaded_set.examples)):  # valid, but no gate can pass it: say so now
            have, lack = ("known-good", "known-bad") if good else ("known-bad", "known-good")
            say(
                f"warning: {loaded_set.path}: only {have} examples ({len(loaded_set.examples)}); "
                f"the gate needs {lack} examples too (TPR and TNR are each measured on one class)"
            )
    examples = sum(len(s.examples) for s in loaded_sets.values())
    say(f"ok: {len(loaded)} criteria, {examples} labelled examples")


@app.command("plan", short_help=short("plan"))
def plan(
    report: Path = report_option(),
    criterion: list[str] | None = criterion_ids_option("Plan only this criterion."),
    criteria: Path = criteria_option(),
    sets: Path = sets_option(),
    config: Path | None = config_option("Gate policy file (judgekit.yaml or pyproject.toml)."),
    assume_tpr: float | None = typer.Option(
        None, min=0.0, max=1.0, help="Plan for this TPR, not the observed one."
    ),
    assume_tnr: float | None = typer.Option(
        None, min=0.0, max=1.0, help="Plan for this TNR, not the observed one."
    ),
) -> None:
    """How many labelled good and bad examples the gate needs, at the observed or assumed rates."""
    if (assume_tpr is None) != (assume_tnr is None):
        say("error: give both --assume-tpr and --assume-tnr, or neither", err=True)
        raise typer.Exit(EXIT_INPUT)
    try:
        known = criterion_files(criteria)
        ids = list(criterion or known)
        problems = unknown_criteria(ids, known, criteria)
        if problems:
            raise InputError(problems)
        # the examples the gate counts: each once (judgekit.inputs.identity)
        _, loaded = load_inputs(criteria, sets, ids)
        labels = {cid: labels_of(loaded[cid]) for cid in ids}
        lines = make_plan(
            Report.read_if_any(report),
            Policy.load(config),
            labels,
            ids,
            (assume_tpr, assume_tnr) if assume_tpr is not None and assume_tnr is not None else None,
        )
    except JudgekitError as error:
        fail(error)
    for line in lines:
        say(line)


@app.command("schema", short_help=short("schema"))
def schema(
    out: Path = typer.Option(
        Path(".judgekit/schema"), help="Folder for criterion.schema.json and example.schema.json."
    ),
) -> None:
    """Write the JSON Schemas that criterion YAML files and calibration sets can point to."""
    write_atomic(out / "criterion.schema.json", json.dumps(criterion_schema(), indent=2) + "\n")
    write_atomic(
        out / "example.schema.json", json.dumps(Example.model_json_schema(), indent=2) + "\n"
    )
    say(
        f"wrote {out / 'criterion.schema.json'} and {out / 'example.schema.json'}\n"
        "point a YAML file at it with: # yaml-language-server: "
        f"$schema={out / 'criterion.schema.json'}"
    )


commands = group(app)
