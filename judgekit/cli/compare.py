"""`judgekit compare`: which judge should we use? Several candidate judges of one criterion on the
same labelled examples, in one run; paired tests, cost, and the cheapest candidate the gate passes.

Exit 0 when a candidate is recommended, 1 when the gate passes none, 2 bad input, 4 the judges
could not be run, 130 interrupted (run again: the answers so far are cached).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from judgekit.cli.app import (
    EXIT_GATE_FAIL,
    EXIT_INCONCLUSIVE,
    REPORT,
    check_split,
    fail,
    interrupted,
    say,
    say_json,
    short,
)
from judgekit.cli.compare_html import write as write_page
from judgekit.cli.options import (
    api_base_option,
    cache_dir_option,
    concurrency_option,
    config_option,
    criteria_option,
    group,
    history_option,
    no_cache_option,
    sets_option,
    timeout_option,
    typer_app,
)
from judgekit.cli.terminal import terminal_progress
from judgekit.compare import adopt as adopting, pairwise
from judgekit.compare.analysis import analyse
from judgekit.compare.candidates import Spec, from_file, from_options, read_file
from judgekit.compare.model import Comparison
from judgekit.compare.render import estimates, table
from judgekit.compare.run import Measured, Measurements, dry_run, judge, load
from judgekit.errors import InputError, JudgekitError, Problem
from judgekit.inputs.catalog import declared_kind
from judgekit.inputs.files import write_atomic
from judgekit.inputs.heldout import in_test_split, leaked, named_by_identity
from judgekit.inputs.pairwise import load_pair_sets, load_pairwise
from judgekit.inputs.policy import Policy
from judgekit.inputs.sets import CalibrationSet
from judgekit.judging.jobs import run_sync
from judgekit.pipeline import Options
from judgekit.report.model import Report
from judgekit.secrets import redact
from judgekit.watch.alpha_budget import Budget
from judgekit.watch.findings import changed_at, findings_of
from judgekit.watch.history import ALPHA, History, record_history
from judgekit.watch.store import locate

app = typer_app()


def _counts(text: str | None) -> list[int]:
    if not text:
        return []
    try:
        counts = [int(part) for part in text.split(",")]
    except ValueError:
        fail(
            InputError.one(
                "--trials", "", f"{text!r}: give trial counts separated by commas, e.g. 1,3"
            )
        )
    if any(not 1 <= k <= 100 for k in counts):
        fail(InputError.one("--trials", "", f"{text!r}: each count from 1 to 100"))
    return counts


@app.command("compare", short_help=short("compare"))
def compare(
    criterion: str | None = typer.Option(
        None, "--criterion", "-c", help="The criterion whose judges are compared."
    ),
    model: list[str] | None = typer.Option(None, "--model", help="A candidate model (repeatable)."),
    variant: list[Path] | None = typer.Option(
        None,
        "--variant",
        help="A prompt variant of the criterion: a "
        "criterion file of the same id (repeatable), e.g. "
        "criteria/variants/ID.short.yaml.",
    ),
    trials: str | None = typer.Option(None, "--trials", help="Trial counts to compare, e.g. 1,3."),
    verdicts: list[Path] | None = typer.Option(
        None,
        "--verdicts",
        help="Recorded verdicts (JSONL or CSV): one "
        "candidate, or one per value of its `candidate` column (repeatable).",
    ),
    spec_file: Path | None = typer.Option(
        None, "--file", "-f", help="A compare.yaml listing the candidates."
    ),
    baseline: str | None = typer.Option(
        None, "--baseline", help="The candidate every other is tested against."
    ),
    adopt: str | None = typer.Option(
        None,
        "--adopt",
        help="Promote this candidate: its settings into the "
        "criterion file (the diff shown), its calibration as the criterion's report. "
        "Only a candidate the gate passes.",
    ),
    force: bool = typer.Option(
        False, "--force", help="With --adopt: adopt a candidate the gate blocks."
    ),
    agent_model: str | None = typer.Option(
        None,
        "--agent-model",
        metavar="MODEL",
        help="The agent's model: a "
        "judge of the same model is blocked, as by `judgekit gate "
        "--agent-model`. Default: gate.agent_model of the policy.",
    ),
    criteria: Path = criteria_option(),
    sets: Path = sets_option(),
    config: Path | None = config_option("Gate policy file (judgekit.yaml or pyproject.toml)."),
    out: Path | None = typer.Option(
        None,
        help="Where compare.json and compare.html are written "
        "(default .judgekit/compare/<criterion>).",
    ),
    report: Path = typer.Option(
        REPORT, help="With --adopt: the report folder the candidate's calibration joins."
    ),
    history: str | None = history_option(
        "With --adopt: the calibration history the adopted report is added to."
    ),
    api_base: str | None = api_base_option(),
    concurrency: int = concurrency_option("Judge calls in flight at once, over all candidates."),
    cache_dir: Path = cache_dir_option(),
    no_cache: bool = no_cache_option(),
    timeout: float = timeout_option(),
    split: str | None = typer.Option(None, help="Use only examples of this split (dev or test)."),
    seed: int = typer.Option(0, help="Seed of the bootstrap intervals."),
    via: str = typer.Option("auto", help="auto or litellm (as for calibrate)."),
    plain_answers: bool = typer.Option(
        False, "--plain-answers", help="Do not ask for structured output."
    ),
    dry: bool = typer.Option(
        False,
        "--dry-run",
        help="Ask nothing, write nothing: per candidate the calls to make, "
        "the answers cached, the tokens and the cost at most.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print compare.json instead of the table."),
    schema: bool = typer.Option(
        False, "--schema", help="Print compare.json's JSON Schema and exit."
    ),
) -> None:
    """Compare candidate judges of one criterion on its labelled set: calibration, gate decision,
    cost and latency each; paired tests against the best and the baseline; the cheapest candidate
    the gate passes."""
    if schema:
        say(json.dumps(Comparison.model_json_schema(), indent=2))
        return
    check_split(split)
    options = Options(
        criteria_dir=criteria,
        sets_dir=sets,
        api_base=api_base,
        concurrency=concurrency,
        cache_dir=None if no_cache else cache_dir,
        timeout_s=timeout,
        split=split,
        seed=seed,
        structured=not plain_answers,
        via=via,
    )
    try:
        options.policy = Policy.load(config)  # the gate's thresholds and max_age, read once
        # A judge a recheck found changed (or a history whose findings cannot be verified): its
        # older cached answers are asked again, as calibrate asks them.
        options.changed_at = changed_at(findings_of(history, config))
        entries = None
        if spec_file is not None:
            if model or variant or trials or verdicts:
                raise InputError.one(
                    "--file",
                    str(spec_file),
                    "lists the candidates itself; drop --model, "
                    "--variant, --trials and --verdicts, or the file",
                )
            named, named_baseline, entries = read_file(spec_file)
            if criterion and named and criterion != named:
                raise InputError.one(
                    spec_file, "criterion", f"is {named!r} but -c says {criterion!r}; give one"
                )
            criterion, baseline = criterion or named, baseline or named_baseline
        if _pairwise(criteria, _named(criterion)):
            unsupported = {
                "--variant": variant,
                "--trials": trials,
                "--file": spec_file,
                "--baseline": baseline,
                "--adopt": adopt,
                "--dry-run": dry,
            }
            return _compare_pairs(
                _named(criterion),
                options,
                (model or [], verdicts or []),
                [flag for flag, given in unsupported.items() if given],
                out,
                as_json,
            )
        criterion = _named(criterion)
        base, whole, _ = load(options, criterion)
        specs = (
            from_file(spec_file, base, entries)
            if spec_file is not None and entries is not None
            else from_options(base, model or [], variant or [], _counts(trials), verdicts or [])
        )
        if dry:
            _show_dry_run(options, specs, as_json)
            return
        _check_named(specs, baseline, adopt)
        _check_shots(specs, whole)
        judged = judge(
            options,
            specs,
            progress=None if as_json else terminal_progress("judging"),
            agent_model=agent_model,
        )
        comparison = analyse(judged, baseline, seed)
        folder = out or Path(".judgekit/compare") / criterion
        write_atomic(folder / "compare.json", comparison.model_dump_json(indent=2) + "\n")
        page = write_page(comparison, folder)
        adopted = _chosen(
            judged, adopt, criteria, report, locate(history, config), as_json, force, split
        )
    except JudgekitError as error:
        fail(error)
    except KeyboardInterrupt:
        interrupted(not no_cache)
    if as_json:
        say_json(comparison.model_dump_json(indent=2))
    else:
        say(table(comparison))
        say(f"\ncompare: {folder / 'compare.json'}\npage: {page}")
    if adopted is not None:  # the run of an adoption exits by the adopted candidate's gate
        raise typer.Exit(_EXITS.get(adopted, EXIT_GATE_FAIL))
    if comparison.recommendation.candidate is None:
        raise typer.Exit(EXIT_GATE_FAIL)


_EXITS = {"PASS": 0, "FAIL": EXIT_GATE_FAIL, "INCONCLUSIVE": EXIT_INCONCLUSIVE}


def _check_shots(specs: list[Spec], whole: CalibrationSet) -> None:
    """A candidate shown set examples with their labels as its few-shot examples is measured on
    what it was told (judgekit.inputs.heldout): refused, before any call is paid for."""
    problems = []
    for spec in specs:
        found = leaked(spec.criterion, whole.examples)
        if found:
            problems.append(
                Problem(
                    spec.name,
                    "examples",
                    f"{len(found)} of its few-shot examples are examples of {whole.path} "
                    f"({', '.join(found[:10])}{' …' if len(found) > 10 else ''}): measured on "
                    "them it is measured on what it was told; take them out of the set or of the "
                    "candidate",
                )
            )
    if problems:
        raise InputError(problems)


def _check_named(specs: list[Spec], baseline: str | None, adopt: str | None) -> None:
    """--baseline and --adopt name candidates: said before any call is paid for."""
    names = [s.name for s in specs]
    for option, name in (("--baseline", baseline), ("--adopt", adopt)):
        if name is not None and name not in names:
            raise InputError.one(
                option, name, f"no such candidate; the candidates are {', '.join(names)}"
            )


def _show_dry_run(options: Options, specs: list[Spec], as_json: bool) -> None:
    """`compare --dry-run`: per candidate, what judging it would ask and cost, asking nothing."""
    found = dry_run(options, specs)
    say(
        json.dumps(
            {"dry_run": True, "candidates": {n: e.to_json() for n, e in found.items()}},
            indent=2,
        )
        if as_json
        else estimates(found)
    )


def _adopt(
    judged: Measurements,
    name: str,
    criteria: Path,
    report_dir: Path,
    history: str | Path,
    quiet: bool,
    force: bool,
    split: str | None,
) -> str:
    """Adopt the candidate `name`; its gate decision (PASS, FAIL, INCONCLUSIVE)."""
    found = next(m for m in judged.measured if m.spec.name == name)
    adopting.check(found, criteria, force)
    note = _adoption_look(judged, found, history, split)
    change = adopting.proposed(found, criteria)
    # With --json, on stderr: stdout is the JSON.
    say(redact(change.diff()), nl=False, err=quiet)
    adopted = adopting.adopt(found, change)
    if note is not None:
        say(f"note: {note}", err=True)
        adopted = adopted.model_copy(update={"warnings": [*adopted.warnings, note]})
    recorded = record_history(
        Report(criteria=[adopted]),
        history,
    )
    written = recorded.write(report_dir, merge=True)
    done = "written" if change.after != change.before else "unchanged"
    count = len(written.criteria)
    say(
        f"adopted {name} ({found.decision.status}): {change.path} {done}; its calibration is "
        f"{adopted.id}'s report in {report_dir / 'report.json'} "
        f"({count} {'criterion' if count == 1 else 'criteria'} there)",
        err=quiet,
    )
    return found.decision.status


def _chosen(  # noqa: PLR0913  what --adopt needs, passed on
    judged: Measurements,
    adopt: str | None,
    criteria: Path,
    report: Path,
    history: str | Path,
    quiet: bool,
    force: bool,
    split: str | None,
) -> str | None:
    """The adopted candidate's gate decision (None: no --adopt, and the look at test figures the
    comparison took is recorded)."""
    if adopt is None:
        _looked(judged, history, quiet)
        return None
    return _adopt(judged, adopt, criteria, report, history, quiet, force, split)


def _test_look(
    judged: Measurements, history: str | Path, candidate: str, always: bool, adopted: bool
) -> tuple[Budget, int | None, int]:
    """The look at the test split that judging these candidates took (judgekit.inputs.heldout):
    the budget, the look's id (None: not taken) and how many test examples it saw (0: none, and
    no look)."""
    tests = in_test_split(judged.set.examples)
    if not tests:
        return Budget("", (), 1, ALPHA), None, 0
    with History.open(history) as db:
        budget, look = db.take_look(
            judged.criterion.id,
            named_by_identity(judged.criterion, tests),
            ALPHA,
            "compare",
            candidate,
            always=always,
            accepted=True if adopted else None,
        )
    return budget, look, len(tests)


def _looked(judged: Measurements, history: str | Path, quiet: bool) -> None:
    """Candidates' figures on test examples, seen: a look at the test split whether or not one
    is adopted (recorded, spent or not; `--adopt` takes its own)."""
    names = sorted(m.report.fingerprint for m in judged.measured)
    candidates = "compare:" + ",".join(n[:12] for n in names)
    budget, _, seen = _test_look(judged, history, candidates, always=True, adopted=False)
    if seen:
        say(
            f"note: the candidates were measured on {seen} test examples: {budget.words()}",
            err=quiet,
        )


def _adoption_look(
    judged: Measurements, found: Measured, history: str | Path, split: str | None
) -> str | None:
    """The held-out discipline of `--adopt` (judgekit.inputs.heldout): choosing among candidates
    by figures that include test examples is a look at the test split, taken before anything is
    written. With `--split test` the look must be one the budget allows (else exit 3, nothing
    written); otherwise the choice rests on the data it was measured on, and the note returned
    says so (on the terminal and in the adopted report's warnings)."""
    budget, look, seen = _test_look(
        judged, history, found.report.fingerprint, always=split != "test", adopted=True
    )
    if seen and split == "test" and look is None:
        say(
            f"error: --adopt: {budget.words()}; nothing adopted. The candidates' test figures "
            "are no longer evidence a choice may rest on: add the fresh test examples, or "
            "adopt on dev (`--split dev --adopt`, said to rest on the data it was measured on)",
            err=True,
        )
        raise typer.Exit(EXIT_INCONCLUSIVE)
    if split == "test":
        return None
    return (
        "adopted by `judgekit compare --adopt` on the data it was measured on: chosen among the "
        "candidates by their figures on these same examples, with no held-out test; `judgekit "
        "improve` tests a choice on the test split"
    )


commands = group(app)


def _named(criterion: str | None) -> str:
    if not criterion:
        raise InputError.one(
            "--criterion", "", "name the criterion whose judges are compared (-c ID)"
        )
    return criterion


def _pairwise(criteria: Path, criterion: str) -> bool:
    path = criteria / f"{criterion}.yaml"
    return path.is_file() and declared_kind(path) == "pairwise"


def _compare_pairs(
    criterion_id: str,
    options: Options,
    candidates: tuple[list[str], list[Path]],
    unsupported: list[str],
    out: Path | None,
    as_json: bool,
) -> None:
    """`judgekit compare` of a pairwise criterion: recorded candidates (each file's `candidate`
    column) and live ones (`--model`), on the same pairs, best first."""
    models, verdicts = candidates
    if unsupported:
        raise InputError.one(
            "judgekit compare",
            criterion_id,
            f"is a pairwise criterion, whose comparison takes --model and --verdicts only "
            f"({', '.join(unsupported)} given); drop them",
        )
    criterion = load_pairwise(options.criteria_dir / f"{criterion_id}.yaml")
    pairs = load_pair_sets(options.sets_dir, [criterion], options.split)[criterion_id]
    t = (options.policy or Policy.load()).for_criterion(criterion_id)
    if not models and not verdicts:
        raise InputError.one(
            "judgekit compare", criterion_id, "give candidates: --model (repeatable) or --verdicts"
        )
    found = [
        c for path in verdicts for c in pairwise.recorded_candidates(criterion, pairs, path, t)
    ]
    if models:
        found += run_sync(pairwise.live_candidates(criterion, pairs, models, options, t))
    names = [c.name for c in found]
    if len(set(names)) != len(names):
        raise InputError.one("judgekit compare", criterion_id, "two candidates share a name")
    ranked = pairwise.ranked(found)
    written = pairwise.write(out or Path(".judgekit/compare") / criterion_id, criterion_id, ranked)
    if as_json:
        say(written.read_text(encoding="utf-8"))
        return
    say(pairwise.table(ranked))
    say(f"written: {written} and {written.with_name('compare.md')}")
