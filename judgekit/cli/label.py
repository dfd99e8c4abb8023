"""`judgekit label`: a local page to label examples blind, or review a report's disagreements;
each label is written back into its file at once (judgekit.inputs.label_writer). `--merge` moves the
labelled examples of a file into a criterion's calibration set (judgekit.inputs.merge).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import typer

from judgekit.cli.app import fail, say, short
from judgekit.cli.label_next import NextRequest, next_to_label
from judgekit.cli.label_page import (
    Session,
    labelling,
    page_judge,
    review as reviewing,
    serve_until_stopped,
)
from judgekit.cli.options import (
    api_base_option,
    config_option,
    criteria_option,
    group,
    history_option,
    sets_option,
    typer_app,
)
from judgekit.cli.pair_label import PairSession, is_pair_file, pair_labelling
from judgekit.errors import InputError, JudgekitError
from judgekit.gate.decision import Gate
from judgekit.improve.audit import suspects
from judgekit.inputs.catalog import find_set
from judgekit.inputs.criteria import load_criterion
from judgekit.inputs.label_reader import read_labels
from judgekit.inputs.merge import merge as merging, set_for
from judgekit.inputs.pairwise import load_pairwise
from judgekit.judging.review import queue_path
from judgekit.judging.runner import RunSettings
from judgekit.watch.findings import findings_of
from judgekit.watch.history import History
from judgekit.watch.store import locate

app = typer_app()


@app.command("label", short_help=short("label"))
def label(
    file: Path | None = typer.Argument(
        None,
        help="JSONL or CSV of examples to label: those without 'passed' "
        "(with --annotator, those without your label). Left out with -c ID: the "
        "criterion's review queue (.judgekit/review/ID.jsonl).",
    ),
    next_n: int | None = typer.Option(
        None,
        "--next",
        min=1,
        metavar="N",
        help="With -c CRITERION and FILE (a pool "
        "of unlabelled replies): judge the pool, draw the N whose labels shrink the "
        "interval that decides the gate (by the judge's verdict, each with how it was "
        "drawn, so the estimates stay unbiased) and label them.",
    ),
    rounds: int | None = typer.Option(
        None,
        "--rounds",
        min=1,
        metavar="K",
        help="With --next, at a pool's first draw: plan K rounds of N, each after the first "
        "allocated from the labels before it; the pool's TPR and TNR stay unbiased over the "
        "plan's rounds (later draws follow it).",
    ),
    verdicts: Path | None = typer.Option(
        None,
        "--verdicts",
        help="With --next: the pool's verdicts, recorded "
        "(JSONL or CSV), instead of judging it live.",
    ),
    model: str | None = typer.Option(
        None,
        "--model",
        help="With --next: judge the pool with this model (default: the criterion's judge.model).",
    ),
    rate: str | None = typer.Option(
        None,
        "--for",
        metavar="tpr|tnr",
        help="With --next: shrink this rate's interval (default: the one the gate is short of).",
    ),
    config: Path | None = config_option(
        "With --next or --review: the gate policy (judgekit.yaml or pyproject.toml)."
    ),
    api_base: str | None = api_base_option(),
    write_only: bool = typer.Option(
        False,
        "--write-only",
        help="With --next: write the examples drawn (with how "
        "each was drawn) and stop; label them with any tool, then --merge.",
    ),
    review: str | None = typer.Option(
        None,
        "--review",
        metavar="CRITERION",
        help="Review this criterion's "
        "disagreements in the latest report and fix labels in its set.",
    ),
    merge: Path | None = typer.Option(
        None,
        "--merge",
        metavar="NEW",
        help="Move the labelled records of NEW "
        "(JSONL or CSV) into the calibration set of -c CRITERION.",
    ),
    labelled_only: bool = typer.Option(
        False,
        "--labelled-only",
        help="With --merge: leave unlabelled records in NEW instead of refusing them.",
    ),
    annotator: str | None = typer.Option(
        None,
        "--annotator",
        metavar="NAME",
        help="Label as NAME, one of several "
        "people: into labels.<NAME> (JSONL: the labels mapping; CSV: a "
        "labels.<NAME> column) instead of passed.",
    ),
    criteria: Path = criteria_option(),
    sets: Path = sets_option(),
    report: Path = typer.Option(
        Path(".judgekit/reports/latest"), help="Report whose verdicts are shown."
    ),
    criterion: str | None = typer.Option(
        None,
        "--criterion",
        "-c",
        help="With FILE: whose question, verdicts "
        "and judge to show; with --merge: whose set to merge into.",
    ),
    cache_dir: Path = typer.Option(Path(".judgekit/cache"), help="On-disk cache of judge answers."),
    history: str | None = history_option(
        "With --review: the calibration history each changed label is kept in."
    ),
    port: int = typer.Option(0, min=0, max=65535, help="Port on 127.0.0.1 (0: any free one)."),
    open_browser: bool = typer.Option(
        True, "--open/--no-open", help="Open the page in the browser."
    ),
) -> None:
    """A local page to label examples blind (p pass, f fail, s skip, or the buttons) or review
    disagreements; each label is written back into its file at once. Ctrl-C stops it. With -c
    CRITERION alone, the replies its judge escalated (selective judging). With --merge NEW -c
    CRITERION, the labelled examples of NEW move into the criterion's set."""
    session: Session | PairSession
    try:
        if rounds is not None and next_n is None:
            raise InputError.one("--rounds", "", "plans the rounds of --next; give --next N too")
        if next_n is not None:
            pool, named = _pool_and_criterion(file, criterion, rate, review, merge)
            out = Path(".judgekit/next") / f"{named}.jsonl"
            _draw_next(
                NextRequest(
                    pool,
                    named,
                    next_n,
                    criteria,
                    sets,
                    report,
                    out,
                    verdicts,
                    model,
                    rate,
                    config,
                    api_base,
                    rounds,
                ),
                RunSettings(cache_dir=cache_dir),
                write_only,
            )
            if write_only:
                return
            file = out  # labelled blind: the page shows the verdict only once labelled
        if file is None and review is None and merge is None and criterion is not None:
            file = _review_queue(criterion)
        if merge is not None and file is None and review is None:
            return _merge(merge, criterion, criteria, sets, labelled_only)
        if review is not None and file is None and merge is None:
            session = _reviewing(review, criteria, sets, report, config, annotator, history)
        elif file is not None and review is None and merge is None and is_pair_file(file):
            question = load_pairwise(criteria / f"{criterion}.yaml").question if criterion else ""
            session = pair_labelling(file, question, annotator)
        elif file is not None and review is None and merge is None:
            session = _labelling(file, criterion, criteria, sets, report, cache_dir, annotator)
        else:
            raise InputError.one(
                "judgekit label",
                "",
                "give a FILE to label, -c CRITERION alone (its review queue), "
                "--review CRITERION, or --merge NEW -c CRITERION",
            )
    except JudgekitError as error:
        fail(error)
    serve_until_stopped(session, port, annotator, bool(review), open_browser)


def _pool_and_criterion(
    file: Path | None,
    criterion: str | None,
    rate: str | None,
    review: str | None,
    merge: Path | None,
) -> tuple[Path, str]:
    """--next's pool of replies and its criterion, both given, and nothing --next cannot go with."""
    if rate not in (None, "tpr", "tnr"):
        raise InputError.one("--for", "", f"is {rate!r}; give tpr or tnr")
    if file is None or criterion is None or review is not None or merge is not None:
        raise InputError.one(
            "--next",
            "",
            "give a pool of replies and the criterion: judgekit label --next "
            "N -c CRITERION POOL.jsonl",
        )
    return file, criterion


def _draw_next(request: NextRequest, settings: RunSettings, write_only: bool) -> None:
    """`label --next`: judge the pool, write the examples drawn to `request.out`, say what next."""
    _, said = next_to_label(request, settings)
    for line in said:
        say(line)
    then = f"label them in {request.out}, then" if write_only else "once labelled"
    say(
        f"{then}: judgekit label --merge {request.out} -c {request.criterion_id} --labelled-only "
        f"&& judgekit calibrate -c {request.criterion_id}"
    )


def _review_queue(criterion: str) -> Path:
    """The replies selective judging escalated to a person, for `label -c CRITERION` alone."""
    file = queue_path(Path("."), criterion)
    if not file.is_file():
        raise InputError.one(
            file,
            "",
            f"no review queue for {criterion}: the judge fixture adds the replies "
            "it escalates (selective judging) here; give a FILE to label instead",
        )
    return file


def _reviewing(
    criterion: str,
    criteria: Path,
    sets: Path,
    report: Path,
    config: Path | None,
    annotator: str | None,
    history: str | None,
) -> Session:
    """`label --review CRITERION`: its disagreements, the labels to re-check first."""
    recheck = labels_to_recheck(criterion, criteria, sets, report, config)
    for rid, evidence in recheck.items():
        say(f"re-check {rid}: {evidence}")
    session = reviewing(criterion, criteria, sets, report, annotator=annotator, recheck=recheck)
    session.on_change = _keeper(locate(history, config), criterion)
    return session


def _labelling(
    file: Path,
    criterion: str | None,
    criteria: Path,
    sets: Path,
    report: Path,
    cache_dir: Path,
    annotator: str | None,
) -> Session:
    """`label FILE`: its unlabelled records, blind, the criterion's judge shown once labelled."""
    source = load_criterion(criteria / f"{criterion}.yaml") if criterion else None
    judge, note = page_judge(criterion, report, criteria, sets, str(cache_dir))
    return labelling(
        file,
        report if report.is_dir() else None,
        criterion,
        source.question if source else "",
        annotator=annotator,
        judge=judge,
        judge_note=note,
        source=source,
    )


def labels_to_recheck(
    criterion_id: str, criteria: Path, sets: Path, report: Path, config: Path | None
) -> dict[str, str]:
    """Id -> the evidence against its label, by judges the gate passes (judgekit.improve.audit)."""
    gate = Gate.from_project(criteria, sets, config, [criterion_id]).with_findings(
        findings_of(None, config)
    )
    labels = read_labels(find_set(sets, criterion_id), criterion_id)
    found = suspects(criterion_id, labels, gate, report, Path(".judgekit/compare"))
    return {s.id: s.words() for s in found}


def _keeper(
    history: str | Path, criterion: str
) -> Callable[[str, bool | None, bool, str | None], None]:
    """Keep each label changed in review in the history (example, old, new, annotator, when)."""

    def keep(example_id: str, old: bool | None, new: bool, annotator: str | None) -> None:
        with History.open(history) as db:
            db.record_label_change(criterion, example_id, old, new, annotator)

    return keep


def _merge(
    new: Path, criterion_id: str | None, criteria: Path, sets: Path, labelled_only: bool
) -> None:
    """`judgekit label --merge NEW -c CRITERION`."""
    if criterion_id is None:
        raise InputError.one(
            "--merge", "", "name the criterion whose set the examples join: -c CRITERION"
        )
    if not new.is_file():
        raise InputError.one(new, "", "no such file")
    done = merging(
        new,
        set_for(sets, criterion_id, new),
        load_criterion(criteria / f"{criterion_id}.yaml"),
        labelled_only=labelled_only,
    )
    for undone in done.rolled_back:
        say(f"warning: {undone}")
    say(f"moved {len(done.moved)} labelled example(s) from {new} into {done.into}")
    if done.already:
        say(
            f"{len(done.already)} more were in the set already, identical, and were only removed "
            f"from {new}: {', '.join(done.already)}"
        )
    if done.left:
        say(f"{len(done.left)} unlabelled example(s) stay in {new}: {', '.join(done.left)}")
    say(f"next: judgekit calibrate -c {criterion_id}")


commands = group(app)
