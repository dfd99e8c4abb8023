"""`judgekit improve`: search for a judge that agrees better with its labels on the dev split, and
accept it only when the test split shows it is better (judgekit.improve.search).

Writes the proposal, its diff and the figures (improve.md, improve.json, improve.html) into `--out` (default .judgekit/improve/<id>); with
`--write`, an accepted proposal becomes the criterion file (the next `calibrate` and the gate
take it as a changed judge, as they must). Exit 0 when a proposal is accepted, 1 when none is,
3 when the test split's alpha budget is spent, 2 bad input, 4 the judges could not be run, 130
interrupted (run again: the answers so far are cached).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from judgekit.cli.app import EXIT_GATE_FAIL, EXIT_INTERRUPTED, fail, short
from judgekit.cli.options import config_option, criteria_option, group, history_option, sets_option, typer_app
from judgekit.cli.terminal import terminal_progress
from judgekit.compare.adopt import criterion_path
from judgekit.errors import InputError, JudgekitError
from judgekit.cli.improve_html import page
from judgekit.improve.render import as_json, diff, markdown, proposal_text, summary
from judgekit.improve.search import Search, improve as search_for
from judgekit.inputs.criteria import load_variant
from judgekit.inputs.files import write_atomic
from judgekit.inputs.policy import Policy
from judgekit.judging.prompts import fingerprint
from judgekit.pipeline import Options
from judgekit.secrets import redact

app = typer_app()
EXIT_SPENT = 3


@app.command("improve", short_help=short("improve"))
def improve(
    criterion: str = typer.Option(..., "--criterion", "-c", help="The LLM criterion whose judge is improved."),
    optimizer_model: Optional[str] = typer.Option(None, "--optimizer-model", metavar="MODEL", help="A model that "
                                                  "proposes rewordings from the dev disagreements (any litellm "
                                                  "model; not the judge's own). Without it: few-shot and settings."),
    proposals: int = typer.Option(3, min=1, max=20, help="Rewordings asked of the optimizer model."),
    shots: int = typer.Option(4, min=0, max=20, help="Few-shot examples chosen from dev at most (0: none)."),
    budget: Optional[int] = typer.Option(None, "--budget", min=1, help="Judge calls the dev search may make at "
                                         "most (the current judge's included); proposals past it are left out."),
    alpha: float = typer.Option(0.05, min=0.0001, max=0.5, help="The test split's alpha budget over all its looks."),
    tolerance: float = typer.Option(0.02, min=0.0, max=1.0, help="How far a TPR / TNR 95% lower bound may fall."),
    allow_same_model: bool = typer.Option(False, "--allow-same-model", help="Let the judge's own model propose."),
    write: bool = typer.Option(False, "--write", help="Write an accepted proposal into the criterion file."),
    model: Optional[str] = typer.Option(None, "--model", help="The judge's model (default: judge.model)."),
    criteria: Path = criteria_option(),
    sets: Path = sets_option(),
    config: Optional[Path] = config_option("Gate policy file (judgekit.yaml or pyproject.toml)."),
    out: Optional[Path] = typer.Option(None, help="Where the proposal and figures go (default .judgekit/improve/<id>)."),
    history: Path = history_option("The calibration history, where every look at the test split is recorded."),
    api_base: Optional[str] = typer.Option(None, help="Base URL of the provider (OpenAI-compatible servers)."),
    concurrency: int = typer.Option(16, min=1, max=1024, help="Judge calls in flight at once."),
    cache_dir: Path = typer.Option(Path(".judgekit/cache"), help="On-disk cache of judge answers (shared with calibrate)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Ask the models again; neither read nor write the cache."),
    timeout: float = typer.Option(60.0, min=1.0, help="Seconds to wait for one answer."),
    via: str = typer.Option("auto", help="auto or litellm (as for calibrate)."),
) -> None:
    """Improve a judge: few-shot examples, settings and rewordings tried on the dev split; the best
    accepted only if the test split shows it significantly better (each look there spends alpha)."""
    options = Options(criteria_dir=criteria, sets_dir=sets, api_base=api_base, concurrency=concurrency,
                      cache_dir=None if no_cache else cache_dir, timeout_s=timeout, via=via, model=model)
    search = Search(optimizer_model, proposals, shots, budget, alpha, tolerance, allow_same_model)
    try:
        options.policy = Policy.load(config)
        found = search_for(options, criterion, search, history, progress=terminal_progress("judging"))
        folder = out or Path(".judgekit/improve") / criterion
        path = criterion_path(criteria, criterion)
        write_atomic(folder / "improve.md", markdown(found))
        write_atomic(folder / "improve.json", as_json(found))
        write_atomic(folder / "improve.html", page(summary(found)))
        proposal = found.proposal()
        if proposal is not None:
            text = proposal_text(path, proposal.criterion, found.criterion)
            write_atomic(folder / "proposal.yaml", text, verbatim=True)
            write_atomic(folder / "proposal.diff", diff(path, text), verbatim=True)
        typer.echo(redact(markdown(found)))
        if proposal is not None:
            typer.echo(redact(diff(path, text)))
        typer.echo(f"improve: {folder / 'improve.md'}")
        if write and found.accepted and proposal is not None and found.best is not None:
            _write(path, text, found.best.report.fingerprint, found.best.spec.model)
    except JudgekitError as error:
        fail(error)
    except KeyboardInterrupt:
        typer.echo("\ninterrupted: every answer received so far is cached; run the same command again to resume",
                   err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    if found.budget is not None and found.budget.look is None:
        raise typer.Exit(EXIT_SPENT)
    if not found.accepted:
        raise typer.Exit(EXIT_GATE_FAIL)


def _write(path: Path, text: str, measured: str, model: str | None) -> None:
    """The accepted proposal as the criterion file, only if it defines the judge that was measured."""
    before = path.read_text(encoding="utf-8")
    write_atomic(path, text, verbatim=True)
    written = load_variant(path, path.stem)
    if fingerprint(written, model) != measured:
        write_atomic(path, before, verbatim=True)
        raise InputError.one(path, "", "written, it would not define the judge the test measured; left as it was. "
                             "Copy proposal.yaml by hand and run `judgekit calibrate`")
    typer.echo(f"written: {path}; run `judgekit calibrate` (the gate takes it as a changed judge)")


commands = group(app)
