"""`judgekit improve`: search for a judge that agrees better with its labels on the dev split, and
accept it only when the test split shows it is better (judgekit.improve.search).

Writes the proposal, its diff and the figures (improve.md, improve.json, improve.html) into
`--out` (default .judgekit/improve/<id>); with `--write`, an accepted proposal becomes the
criterion file (the next `calibrate` and the gate take it as a changed judge, as they must). Exit 0
when a proposal is accepted, 1 when none is, 3 when the test split's alpha budget is spent, 2 bad
input, 4 the judges could not be run, 130 interrupted (run again: the answers so far are cached).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from judgekit.cli.app import EXIT_GATE_FAIL, fail, interrupted, say, short
from judgekit.cli.improve_html import page
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
from judgekit.compare.adopt import adopt, criterion_path
from judgekit.errors import InputError, JudgekitError
from judgekit.improve.render import as_json, markdown, proposed, summary
from judgekit.improve.search import Search, improve as search_for
from judgekit.inputs.catalog import find_set
from judgekit.inputs.criteria import Criterion
from judgekit.inputs.files import read_text, write_atomic
from judgekit.inputs.heldout import leaked
from judgekit.inputs.label_writer import read_records
from judgekit.inputs.merge import remove_examples
from judgekit.inputs.policy import Policy
from judgekit.inputs.sets import read_set
from judgekit.pipeline import Options
from judgekit.secrets import redact
from judgekit.watch.store import locate

app = typer_app()
EXIT_SPENT = 3


@app.command("improve", short_help=short("improve"))
def improve(
    criterion: str = typer.Option(
        ..., "--criterion", "-c", help="The LLM criterion whose judge is improved."
    ),
    optimizer_model: str | None = typer.Option(
        None,
        "--optimizer-model",
        metavar="MODEL",
        help="A model that "
        "proposes rewordings from the dev disagreements (any litellm "
        "model; not the judge's own). Without it: few-shot and settings.",
    ),
    proposals: int = typer.Option(
        3, min=1, max=20, help="Rewordings asked of the optimizer model."
    ),
    shots: int = typer.Option(
        4, min=0, max=20, help="Few-shot examples chosen from dev at most (0: none)."
    ),
    budget: int | None = typer.Option(
        None,
        "--budget",
        min=1,
        help="Judge calls the dev search may make at "
        "most (the current judge's included); proposals past it are left out.",
    ),
    alpha: float = typer.Option(
        0.05, min=0.0001, max=0.5, help="The test split's alpha budget over all its looks."
    ),
    tolerance: float = typer.Option(
        0.02, min=0.0, max=1.0, help="How far a TPR / TNR 95% lower bound may fall."
    ),
    allow_same_model: bool = typer.Option(
        False, "--allow-same-model", help="Let the judge's own model propose."
    ),
    write: bool = typer.Option(
        False, "--write", help="Write an accepted proposal into the criterion file."
    ),
    model: str | None = typer.Option(
        None, "--model", help="The judge's model (default: judge.model)."
    ),
    criteria: Path = criteria_option(),
    sets: Path = sets_option(),
    config: Path | None = config_option("Gate policy file (judgekit.yaml or pyproject.toml)."),
    out: Path | None = typer.Option(
        None, help="Where the proposal and figures go (default .judgekit/improve/<id>)."
    ),
    history: str | None = history_option(
        "The calibration history, where every look at the test split is recorded."
    ),
    api_base: str | None = api_base_option(),
    concurrency: int = concurrency_option(),
    cache_dir: Path = cache_dir_option(),
    no_cache: bool = no_cache_option(),
    timeout: float = timeout_option(),
    via: str = typer.Option("auto", help="auto or litellm (as for calibrate)."),
) -> None:
    """Improve a judge: few-shot examples, settings and rewordings tried on the dev split; the best
    accepted only if the test split shows it significantly better (each look there spends alpha)."""
    options = Options(
        criteria_dir=criteria,
        sets_dir=sets,
        api_base=api_base,
        concurrency=concurrency,
        cache_dir=None if no_cache else cache_dir,
        timeout_s=timeout,
        via=via,
        model=model,
    )
    search = Search(optimizer_model, proposals, shots, budget, alpha, tolerance, allow_same_model)
    try:
        options.policy = Policy.load(config)
        found = search_for(
            options,
            criterion,
            search,
            locate(history, config),
            progress=terminal_progress("judging"),
        )
        folder = out or Path(".judgekit/improve") / criterion
        text = markdown(found)
        write_atomic(folder / "improve.md", text)
        write_atomic(folder / "improve.json", as_json(found))
        write_atomic(folder / "improve.html", page(summary(found)))
        say(redact(text))
        proposal = found.proposal()
        if proposal is not None and found.best is not None:
            change = proposed(
                criterion_path(criteria, criterion), proposal.criterion, found.criterion
            )
            # Copies beside the figures (a CI artifact, perhaps): no credential of the file goes
            # with them.
            write_atomic(folder / "proposal.yaml", change.after)
            write_atomic(folder / "proposal.diff", change.diff())
            say(redact(change.diff()))
            if write and found.accepted:  # written only if it defines the judge the test measured
                path, ids = _shots_in_set(sets, proposal.criterion)  # refused before any write
                adopt(found.best, change)
                moved = _shots_out_of_set(path, ids)
                say(
                    f"written: {change.path}{moved}; run `judgekit calibrate` "
                    "(the gate takes it as a changed judge)"
                )
        say(f"improve: {folder / 'improve.md'}")
    except JudgekitError as error:
        fail(error)
    except KeyboardInterrupt:
        interrupted(not no_cache)
    if found.budget is not None and found.budget.look is None:
        raise typer.Exit(EXIT_SPENT)
    if not found.accepted:
        raise typer.Exit(EXIT_GATE_FAIL)


def _shots_in_set(sets: Path, criterion: Criterion) -> tuple[Path, set[str]]:
    """The set, and the ids of its examples the criterion to write shows as few-shot examples
    (each record that shows the judge what a shot shows it); refused when the set's format is
    one judgekit does not take records out of, before anything is written."""
    path = find_set(sets, criterion.id)
    loaded, _ = read_set(path, criterion.id)
    ids = set(leaked(criterion, loaded.examples))
    if ids and path.suffix.lower() not in (".jsonl", ".csv"):
        raise InputError.one(
            path,
            "",
            f"holds {len(ids)} examples the proposal makes few-shot examples "
            f"({', '.join(sorted(ids))}); judgekit takes records out of .jsonl and .csv sets "
            "only, so nothing was written: convert the set to .jsonl, or write the proposal "
            "(proposal.yaml) by hand and remove those examples from the set",
        )
    return path, ids


def _shots_out_of_set(path: Path, ids: set[str]) -> str:
    """The set's examples the written criterion now shows as few-shot examples taken out of the
    set, so that it calibrates; each record kept whole in `<id>.shots.jsonl` beside it (the
    criterion file holds what the judge is shown of it, with its label). What to say."""
    if not ids:
        return ""
    kept = path.with_name(f"{path.stem}.shots.jsonl")
    records = [r for r in read_records(path) if str(r.get("id")) in ids]
    before = read_text(kept) if kept.exists() else ""
    write_atomic(kept, before + "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    remove_examples(path, ids)
    return (
        f"; {len(ids)} examples of {path} are its few-shot examples now and left the set "
        f"({', '.join(sorted(ids))}): the criterion file shows them with their labels, and "
        f"{kept} keeps their records whole"
    )


commands = group(app)
