"""The embedded local judge (SmolLM2-135M through llama.cpp behind litellm's custom provider)."""

import pytest

from judgekit.errors import ModelUnavailable
from judgekit.pipeline import Options, measure
from tests.conftest import REPO


@pytest.mark.local_model
def test_local_judge_answers_every_example_under_the_grammar(project, local_model):
    source = (REPO / "calibration_sets" / "card-block-confirmed.jsonl").read_text().splitlines()
    (project.criteria / "card-block-confirmed.yaml").write_text(
        (REPO / "criteria" / "card-block-confirmed.yaml").read_text()
    )
    (project.sets / "card-block-confirmed.jsonl").write_text(
        "\n".join(source[:3] + source[-3:]) + "\n"
    )
    options = Options(
        criteria_dir=project.criteria,
        sets_dir=project.sets,
        model=local_model,
        cache_dir=project.root / "cache",
    )
    c = measure(options).criteria[0]
    assert c.n == 6 and c.abstained == 0, "the grammar must force a parseable answer"
    assert c.judge.model == "local/smollm2" and c.usage.calls == 6
    assert c.usage.prompt_tokens > 6 * 100 and c.usage.completion_tokens > 6 * 5
    again = measure(options).criteria[0]
    assert again.usage.cached == 6 and again.confusion == c.confusion


def test_missing_gguf_stops_the_run_with_the_fix(project):
    project.criterion({"id": "c", "question": "ok?"})
    project.jsonl("c", [{"id": "a", "output": "x", "passed": True}])
    with pytest.raises(ModelUnavailable, match=r"local/nowhere.gguf.*cannot be run here"):
        measure(
            Options(
                criteria_dir=project.criteria,
                sets_dir=project.sets,
                model="local/nowhere.gguf",
                cache_dir=None,
            )
        )


def test_the_threads_come_from_the_environment_or_are_llama_cpps_choice(monkeypatch):
    from judgekit.llm.local import _threads

    for given, threads in (("1", 1), (" 3 ", 3), ("", None), ("0", None), ("many", None)):
        monkeypatch.setenv("JUDGEKIT_LOCAL_THREADS", given)
        assert _threads() == threads, given
    monkeypatch.delenv("JUDGEKIT_LOCAL_THREADS")
    assert _threads() is None
