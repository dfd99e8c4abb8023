"""Where a judge is asked: a criterion's `judge.api_base`, `--api-base` over it, the environment's
OPENAI_BASE_URL / OPENAI_API_BASE; validated as --api-base is, credentials never shown, the public
form in the report, not in the fingerprint, and the same endpoint for the Judge and recheck."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgekit.cli import app
from judgekit.errors import InputError
from judgekit.inputs.criteria import load_criterion
from judgekit.judging.judge import Judge
from judgekit.judging.setup import JudgeSetup
from judgekit.llm.retry import RetryPolicy
from judgekit.pipeline import Options, measure
from judgekit.secrets import public_url
from judgekit.testing import FakeServer, script
from tests.conftest import balanced, llm_criterion

VERDICTS = script({"reply-p": True, "reply-f": False})
FAST = RetryPolicy(attempts=2, base_s=0.01, cap_s=0.02, first_contact_attempts=2, down_after=3)
runner = CliRunner()


@pytest.fixture
def setup(project):
    project.jsonl("says-blocked", balanced(3, 3))
    return project


def run(project, **extra):
    values = dict(
        criteria_dir=project.criteria,
        sets_dir=project.sets,
        model="openai/judge",
        cache_dir=project.root / "cache",
        retry=FAST,
        timeout_s=5,
    )
    return measure(Options(**{**values, **extra})).criteria[0]


def test_a_criterion_names_its_endpoint_and_the_command_line_overrides_it(setup):
    with FakeServer(VERDICTS) as own, FakeServer(VERDICTS) as other:
        setup.criterion(llm_criterion(judge={"api_base": own.url}))
        c = run(setup)
        assert own.requests == 6 and c.judge.api_base == own.url and c.confusion.tp == 3
        overridden = run(setup, api_base=other.url)
        assert own.requests == 6 and other.requests == 6 and overridden.judge.api_base == other.url
    # The endpoint is part of the judge: another endpoint's evidence is another judge's.
    assert c.fingerprint != overridden.fingerprint
    assert c.judge.setup["endpoint"] == own.url and overridden.judge.setup["endpoint"] == other.url


@pytest.mark.parametrize(
    "url, says",
    [
        ("htp://ana:pw-hidden-1234@llm.example/v1", "does not start with http"),
        ("http://llm.example:99999/v1?api-key=qk-hidden-5678", "is not a usable URL"),
        ("http://ana:pw-hidden-1234@/v1", "names no host"),
    ],
)
def test_a_bad_endpoint_in_a_criterion_is_refused_as_the_command_line_s_is(setup, url, says):
    setup.criterion(llm_criterion(judge={"api_base": url}))
    with pytest.raises(InputError) as caught:
        run(setup)
    (problem,) = caught.value.problems
    assert (
        problem.source.endswith("says-blocked.yaml")
        and problem.location == "judge.api_base"
        and says in problem.message
    )
    for command in (["calibrate", "--model", "openai/judge"], ["validate"]):
        result = runner.invoke(app, command)
        assert result.exit_code == 2 and "judge.api_base" in result.output and says in result.output
        assert "pw-hidden-1234" not in result.output and "qk-hidden-5678" not in result.output
    assert "pw-hidden-1234" not in str(caught.value) and "qk-hidden-5678" not in str(caught.value)


def test_credentials_in_a_criterion_s_endpoint_are_sent_and_never_shown(setup, tmp_path):
    password, query_key = "pw-Crit3rion-8812", "qk-criterion-7731"
    secrets = [password, query_key, base64.b64encode(f"ana:{password}".encode()).decode()]
    printed = []
    # echoes the request line and its auth
    with FakeServer(VERDICTS, fail_first={"reply-p1:": ["echo"]}) as server:
        host = server.url.removeprefix("http://")
        setup.criterion(
            llm_criterion(
                judge={
                    "model": "openai/judge",
                    "api_base": f"http://ana:{password}@{host}?api-key={query_key}",
                }
            )
        )
        for command in (
            ["calibrate", "--json"],
            ["calibrate", "--gate", "--junit", str(tmp_path / "junit.xml")],
            ["recheck", "--json"],
            ["history", "--json"],
        ):
            result = runner.invoke(app, command)
            printed.append(result.output)
            # 3: the gate, on 6 examples, is INCONCLUSIVE
            assert result.exit_code in (0, 3), result.output
        # sent with every request
        assert all(f"api-key={query_key}" in target for target in server.targets)
    report = json.loads((setup.root / ".judgekit/reports/latest/report.json").read_text())
    # the public form only: the query as a digest of it
    assert report["criteria"][0]["judge"]["api_base"] == server.url + "?<query:" + (
        hashlib.sha256(f"api-key={query_key}".encode()).hexdigest()[:12] + ">"
    )
    for text in printed:
        assert not any(secret in text for secret in secrets), text
    written = [p for p in setup.root.rglob("*") if p.is_file() and p.parent != setup.criteria]
    assert {"report.json", "report.md", "verdicts.jsonl", "history.sqlite"} <= {
        p.name for p in written
    }
    for path in written + [tmp_path / "junit.xml"]:
        assert not any(secret.encode() in path.read_bytes() for secret in secrets), path


def test_recheck_and_the_judge_ask_the_criterion_s_endpoint_with_its_credentials(setup):
    with FakeServer(VERDICTS) as server, FakeServer(VERDICTS) as elsewhere:
        own = (
            server.url.replace("http://", "http://ana:pw-recheck-4411@")
            + "?api-key=qk-recheck-3322"
        )
        setup.criterion(llm_criterion(judge={"model": "openai/judge", "api_base": own}))
        assert runner.invoke(app, ["calibrate", "-q"]).exit_code == 0
        asked = server.requests
        result = runner.invoke(app, ["recheck", "--size", "4", "--json"])
        assert result.exit_code == 0, result.output
        assert server.requests == asked + 4 and server.targets[-1].endswith(
            "?api-key=qk-recheck-3322"
        )
        # The Judge a test calls: the calibrated endpoint (its public form), with the
        # criterion's credentials.
        criterion = load_criterion(setup.criteria / "says-blocked.yaml")
        judge = Judge(
            criterion,
            JudgeSetup("llm", model="openai/judge", endpoint=public_url(own)),
            cache_dir=None,
        )
        assert judge("reply-p0: blocked").passed is True and server.targets[-1].endswith(
            "?api-key=qk-recheck-3322"
        )
        # uncalibrated: the criterion's own
        assert Judge(criterion, cache_dir=None)("reply-f0: no").passed is False
        assert server.requests == asked + 6
        # The criterion now names another endpoint than the calibrated one:
        # recheck refuses before asking.
        setup.criterion(llm_criterion(judge={"model": "openai/judge", "api_base": elsewhere.url}))
        moved = runner.invoke(app, ["recheck"])
        assert (
            moved.exit_code == 2
            and "judge.api_base" in moved.output
            and "is not the calibrated endpoint" in moved.output
        )
        assert elsewhere.requests == 0 and server.requests == asked + 6


def test_a_judge_never_asks_an_endpoint_that_only_a_report_names(setup, monkeypatch):
    """A report is data, not settings (one restored from a shared cache can be forged): its judge's
    endpoint is asked only where the criterion or the environment names it,
    with their credentials."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    with FakeServer(VERDICTS) as ours, FakeServer(VERDICTS) as theirs:
        setup.criterion(llm_criterion(judge={"model": "openai/judge"}))
        criterion = load_criterion(setup.criteria / "says-blocked.yaml")
        forged = Judge(
            criterion,
            JudgeSetup("llm", model="openai/judge", endpoint=theirs.url),
            cache_dir=None,
        )
        with pytest.raises(InputError, match="never asked on its own"):
            forged("reply-p0: blocked")
        monkeypatch.setenv("OPENAI_BASE_URL", ours.url)
        with pytest.raises(InputError, match="neither judge.api_base nor OPENAI_BASE_URL names"):
            forged("reply-p0: blocked")
        named = Judge(
            criterion,
            JudgeSetup("llm", model="openai/judge", endpoint=ours.url),
            cache_dir=None,
        )
        assert named("reply-p0: blocked").passed is True
        # OPENAI_BASE_URL names the endpoint of OpenAI-style models only: another provider's model
        # would be asked at that provider's own server, not at the calibrated one.
        other = Judge(
            criterion,
            JudgeSetup("llm", model="anthropic/judge", endpoint=ours.url),
            cache_dir=None,
        )
        with pytest.raises(InputError, match="never asked on its own"):
            other("reply-p0: blocked")
        # A report that names no endpoint (the provider's own), of a criterion that names one.
        setup.criterion(llm_criterion(judge={"model": "openai/judge", "api_base": theirs.url}))
        own = load_criterion(setup.criteria / "says-blocked.yaml")
        with pytest.raises(InputError, match="its calibration named no endpoint"):
            Judge(own, JudgeSetup("llm", model="openai/judge", endpoint=None), cache_dir=None)(
                "reply-p0: x"
            )
        assert (ours.requests, theirs.requests) == (1, 0)


@pytest.mark.parametrize("via", ["auto", "litellm"])
def test_the_environment_s_endpoint_openai_base_url_first(setup, monkeypatch, via):
    setup.criterion(llm_criterion())
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-env-endpoint-0000")
    with FakeServer(VERDICTS) as base_url, FakeServer(VERDICTS) as api_base:
        monkeypatch.setenv("OPENAI_BASE_URL", base_url.url)
        monkeypatch.setenv("OPENAI_API_BASE", api_base.url)
        c = run(setup, via=via, cache_dir=None)
        assert base_url.requests == 6 and api_base.requests == 0 and c.confusion.tp == 3
        monkeypatch.delenv("OPENAI_BASE_URL")
        run(setup, via=via, cache_dir=None)
        assert api_base.requests == 6


def test_the_environment_s_endpoint_is_part_of_the_judge_s_identity(setup, monkeypatch):
    """Calibrated with OPENAI_BASE_URL at a good judge, then pointed at one that passes everything:
    the next calibration asks the new endpoint instead of being served the first one's cached
    answers, and a judge calibrated at the first is not asked at the second."""
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    setup.criterion(llm_criterion(judge={"model": "openai/judge"}))
    with FakeServer(VERDICTS) as good, FakeServer(script({}, default=True)) as lenient:
        monkeypatch.setenv("OPENAI_BASE_URL", good.url)
        first = run(setup)
        assert first.judge.api_base == good.url and first.metrics["tnr"] == 1.0
        assert good.requests == 6
        monkeypatch.setenv("OPENAI_BASE_URL", lenient.url)
        second = run(setup)
        assert lenient.requests == 6 and good.requests == 6  # nothing served from the cache
        assert second.judge.api_base == lenient.url and second.metrics["tnr"] == 0.0
        criterion = load_criterion(setup.criteria / "says-blocked.yaml")
        with pytest.raises(InputError, match="neither judge.api_base nor OPENAI_BASE_URL names"):
            Judge(criterion, first.judge.measured(), cache_dir=setup.root / "cache")(
                "reply-f0: not blocked"
            )
        assert lenient.requests == 6
        # Back at the calibrated endpoint, its judge asks it (its cached answers are its own).
        monkeypatch.setenv("OPENAI_BASE_URL", good.url)
        verdict = Judge(criterion, first.judge.measured(), cache_dir=setup.root / "cache")(
            "reply-f0: x"
        )
        assert verdict.passed is False


def test_a_calibration_at_the_provider_s_own_endpoint_is_not_asked_elsewhere(setup, monkeypatch):
    """A calibration that named no endpoint asked the provider's own: with OPENAI_BASE_URL set
    since, its judge refuses to ask there."""
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    setup.criterion(llm_criterion(judge={"model": "openai/judge"}))
    criterion = load_criterion(setup.criteria / "says-blocked.yaml")
    with FakeServer(VERDICTS) as elsewhere:
        monkeypatch.setenv("OPENAI_BASE_URL", elsewhere.url)
        judge = Judge(
            criterion, JudgeSetup("llm", model="openai/judge", endpoint=None), cache_dir=None
        )
        with pytest.raises(
            InputError, match="named no endpoint .the provider's own., but OPENAI_BASE_URL"
        ):
            judge("reply-p0: blocked")
        assert elsewhere.requests == 0


def test_refresh_asks_every_answer_again_and_replaces_the_cached_one(setup):
    """After a drift the cached answers are the old judge's: a plain calibrate is served them,
    `--refresh` asks the judge as it is now and keeps its answers for the next run."""
    setup.criterion(llm_criterion(judge={"model": "openai/judge"}))

    def tnr(*extra):
        done = runner.invoke(app, ["calibrate", "--api-base", server.url, "-q", *extra])
        assert done.exit_code == 0, done.output
        report = json.loads((setup.root / ".judgekit/reports/latest/report.json").read_text())
        return report["criteria"][0]["metrics"]["tnr"]

    with FakeServer(VERDICTS) as server:
        assert tnr() == 1.0 and server.requests == 6
        server.answer = script({}, default=True)  # the provider's judge now passes everything
        assert tnr() == 1.0 and server.requests == 6  # served the old judge's answers
        assert tnr("--refresh") == 0.0 and server.requests == 12
        assert tnr() == 0.0 and server.requests == 12  # the refreshed answers, from the cache


# The endpoint variables litellm reads, from its installed source: each provider's that are not
# `<PROVIDER>_API_BASE` / `<PROVIDER>_BASE_URL` must be judgekit's (judgekit.llm.endpoints.
# IRREGULAR), or a judge moved by one of them would pass as the judge calibrated.
_READ = re.compile(
    r"(?:get_secret_str|get_secret|os\.environ\.get|os\.getenv)\(\s*[\"']([A-Z0-9_]+)[\"']"
)
_ENDPOINT = re.compile(r"(_API_BASE|_BASE_URL|_ENDPOINT|_URL)$")
# Read in a provider's folder, but not where its chat completions are asked: sign-in and token
# addresses, other routes (speech, images, video, OAuth, another vendor's API through the
# provider), a referer header, and providers a criterion cannot judge with (search, rerank,
# images, agents).
_NOT_CHAT_ENDPOINTS = {
    "AGENTCORE_GATEWAY_URL",
    "ANTHROPIC_AWS_API_BASE",
    "ANTHROPIC_AWS_BASE_URL",
    "AZURE_SPEECH_API_BASE",
    "BEDROCK_MANTLE_API_BASE",
    "DEEPSEEK_ANTHROPIC_API_BASE",
    "GIGACHAT_AUTH_URL",
    "GITHUB_COPILOT_ACCESS_TOKEN_URL",
    "GITHUB_COPILOT_DEVICE_CODE_URL",
    "MISTRAL_AZURE_API_BASE",
    "OPENAI_CHATGPT_API_BASE",
    "OR_SITE_URL",
    "TENCENT_ANTHROPIC_API_BASE",
    "WATSONX_IAM_URL",
    "XAI_OAUTH_API_BASE",
    "AZURE_API_BASE",  # azure_ai's Anthropic and embedding routes; its chat reads AZURE_AI_API_BASE
    "HOSTED_VLLM_API_BASE",  # watsonx's and vllm's hosted-vLLM routes: the hosted_vllm provider's
}
_NOT_CHAT_PROVIDERS = {
    "black_forest_labs",
    "chatgpt",
    "dashscope",
    "datarobot",
    "exa_ai",
    "fal_ai",
    "fastcrw",
    "gradient_ai",
    "opencode",
    "you_com",
    "vllm",
}


def _litellm_reads() -> dict[str, set[str]]:
    """Per provider, the endpoint variables the installed litellm reads: in its folder under
    litellm/llms, and where get_llm_provider names its endpoint."""
    import importlib.util

    spec = importlib.util.find_spec("litellm")
    assert spec is not None and spec.origin is not None
    root = Path(spec.origin).parent
    found: dict[str, set[str]] = {}
    for folder in sorted((root / "llms").iterdir()):
        if not folder.is_dir() or folder.name in _NOT_CHAT_PROVIDERS:
            continue
        names = {
            n
            for f in folder.rglob("*.py")
            for n in _READ.findall(f.read_text(errors="replace"))
            if _ENDPOINT.search(n)
        }
        found[folder.name] = names
    lines = (root / "litellm_core_utils" / "get_llm_provider_logic.py").read_text().splitlines()
    provider = re.compile(r"custom_llm_provider\s*==\s*[\"']([a-z0-9_\-]+)[\"']")
    for i, line in enumerate(lines):
        for name in _READ.findall(line):
            near = [
                m.group(1) for back in lines[max(i - 3, 0) : i + 1] if (m := provider.search(back))
            ]
            if near and _ENDPOINT.search(name):
                found.setdefault(near[-1], set()).add(name)
    for names in found.values():
        names -= _NOT_CHAT_ENDPOINTS
    return {p: n for p, n in found.items() if n}


def test_every_endpoint_variable_litellm_reads_for_a_provider_is_part_of_its_judge():
    from judgekit.llm.endpoints import endpoint_variables

    read = _litellm_reads()
    assert "friendliai" in read and "watsonx" in read  # the reading found what it looks for
    missing = {
        provider: sorted(names - set(endpoint_variables(f"{provider}/model")))
        for provider, names in read.items()
    }
    assert not {p: n for p, n in missing.items() if n}, (
        "litellm reads these endpoint variables; add them to judgekit.llm.endpoints.IRREGULAR "
        "in the order litellm reads them"
    )


@pytest.mark.parametrize(
    ("model", "variable"),
    [
        ("friendliai/m", "FRIENDLI_API_BASE"),
        ("meta_llama/m", "LLAMA_API_BASE"),
        ("vertex_ai/m", "VERTEXAI_API_BASE"),
        ("watsonx/m", "WATSONX_URL"),
        ("bedrock/m", "AWS_BEDROCK_RUNTIME_ENDPOINT"),
        ("huggingface/m", "HF_API_BASE"),
        ("featherless_ai/m", "FEATHERLESS_AI_API_BASE"),
        ("ollama_chat/m", "OLLAMA_API_BASE"),  # a prefix of its own, another provider's variable
        ("cohere_chat/m", "COHERE_API_BASE"),
    ],
)
def test_an_endpoint_variable_of_litellm_s_own_name_is_part_of_the_judge(model, variable):
    """FRIENDLI_API_BASE moved a friendliai judge to another host and the gate passed it: the
    setup knew only FRIENDLIAI_API_BASE."""
    from judgekit.inputs.criteria import LLMCriterion
    from judgekit.judging.build_setup import setup_of

    c = LLMCriterion(id="c", question="Does it say hello?")

    def setup(environ):
        return setup_of(c, model=model, api_base=None, via="auto", structured=True, environ=environ)

    moved = setup({variable: "http://elsewhere.example"})
    assert moved.endpoint == "http://elsewhere.example"
    assert moved.digest != setup({}).digest


def test_an_endpoint_s_query_is_part_of_the_judge_and_never_shown(setup):
    """A gateway that picks the model by a query parameter (or Azure's api-version): the public
    form left the query out, so an edit from ?judge=good to ?judge=bad passed the gate."""
    with FakeServer(VERDICTS) as server:
        setup.criterion(
            llm_criterion(judge={"model": "openai/judge", "api_base": server.url + "?judge=good"})
        )
        assert runner.invoke(app, ["calibrate", "-q"]).exit_code in (0, 3)
        assert runner.invoke(app, ["gate"]).output.count("judge changed") == 0
        setup.criterion(
            llm_criterion(judge={"model": "openai/judge", "api_base": server.url + "?judge=bad"})
        )
        moved = runner.invoke(app, ["gate"])
    assert moved.exit_code == 1 and "the criterion's judge changed" in moved.output, moved.output
    assert "judge=bad" not in moved.output and "judge=good" not in moved.output
