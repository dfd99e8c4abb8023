"""The one builder of a judge's setup (judgekit.judging.setup.JudgeSetup): from a criterion as
loaded and the run's settings (`setup_of`), and again from the files and the environment now for
evidence recorded under a setup (`setup_now`, `rebuilt`).

>>> from judgekit.inputs.criteria import LLMCriterion
>>> c = LLMCriterion(id="c", question="Does it say hello?")
>>> a = setup_of(c, model="openai/m", api_base=None, via="auto", structured=True, environ={})
>>> b = setup_of(c, model="openai/m", api_base=None, via="auto", structured=True,
...              environ={"OPENAI_BASE_URL": "http://other:8080/v1"})
>>> a.differences(b)
["endpoint None (now 'http://other:8080/v1')"]
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from judgekit.fingerprint import canonical_hash
from judgekit.inputs.criteria import (
    ClaimsCriterion,
    Criterion,
    LLMCriterion,
    RegexCriterion,
    load_criterion,
    with_trials,
)
from judgekit.judging.prompts import judge_spec
from judgekit.judging.setup import LIVE, JudgeSetup, Source, endpoint_of
from judgekit.llm.weights import with_weights
from judgekit.secrets import public_url


def setup_of(  # noqa: PLR0913  what a setup is built from, each named at every call
    criterion: Criterion,
    *,
    model: str | None,
    api_base: str | None,
    via: str | None,
    structured: bool | None,
    source: Source = LIVE,
    environ: Mapping[str, str] | None = None,
) -> JudgeSetup:
    """The one builder of a judge's setup: the criterion as loaded (its trials as the run asks
    them), the model asked, `api_base` given by the run (`--api-base`; the criterion's own
    `judge.api_base`, else the endpoint the environment names for the model, when None), the
    transport and structured answers, and where the verdicts come from (`source`)."""
    if isinstance(criterion, RegexCriterion):
        return JudgeSetup("regex", prompt=canonical_hash(judge_spec(criterion, None)))
    spec = judge_spec(criterion, model)
    parameters = dict(spec["parameters"])
    trials = parameters.pop("trials", 1)
    if source.kind == "recorded":
        # Another tool's judge: its prompt, model and sampling are its own. What it judged is
        # this criterion's question, so that stays part of what the verdicts are about.
        return JudgeSetup(
            "recorded",
            model=model,
            trials=trials,
            prompt=canonical_hash(spec["prompt"]),
        )
    return JudgeSetup(
        spec["kind"],
        model=model,
        endpoint=public_url(endpoint_for(criterion, api_base, model, environ)),
        via=via,
        structured=structured,
        trials=trials,
        sampling=with_weights(parameters, model),
        prompt=canonical_hash(spec["prompt"]),
    )


def endpoint_for(
    criterion: LLMCriterion | ClaimsCriterion,
    given: str | None,
    model: str | None,
    environ: Mapping[str, str] | None = None,
) -> str | None:
    """The endpoint a criterion's judge is asked at (`endpoint_of` its `judge.api_base`)."""
    return endpoint_of(criterion.judge.api_base, given, model, environ)


def setup_now(
    criterion: Criterion, recorded: JudgeSetup, environ: Mapping[str, str] | None = None
) -> JudgeSetup:
    """The setup the criterion defines now, for evidence recorded under `recorded`: what the run
    chose and the criterion does not say (the model when it names none, the transport, structured
    answers, trials) is taken from `recorded`; what the criterion and the environment say (its
    prompt, model, sampling, the endpoint) is read again. An endpoint only `--api-base` named and
    named by nothing now stands."""
    if isinstance(criterion, RegexCriterion):
        return setup_of(criterion, model=None, api_base=None, via=None, structured=None)
    asked = with_trials(criterion, recorded.trials)
    if recorded.kind == "recorded":
        # the model named beside the verdicts (--model); a criterion that names another is stale
        return setup_of(
            asked,
            model=criterion.judge.model or recorded.model,
            api_base=None,
            via=None,
            structured=None,
            source=Source("recorded", "-"),
        )
    model = criterion.judge.model or recorded.model
    # An endpoint only the run named (`--api-base`) stands while nothing names another now; one
    # the criterion or the environment names now is the one asked, and must be the one measured.
    named = endpoint_of(criterion.judge.api_base, None, model, environ)
    return setup_of(
        asked,
        model=model,
        api_base=recorded.endpoint if named is None else None,
        via=recorded.via,
        structured=recorded.structured,
        environ=environ,
    )


def rebuilt(path: Path, recorded: JudgeSetup) -> tuple[str | None, JudgeSetup]:
    """The criterion file at `path` loaded (the digest of the bytes read) and `setup_now` of it:
    the gate's way when the fast path cannot say."""
    criterion = load_criterion(path)
    return criterion.digest, setup_now(criterion, recorded)
