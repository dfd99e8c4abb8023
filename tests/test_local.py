"""The embedded local judge (SmolLM2-135M through llama.cpp behind litellm's custom provider)."""

import pytest

from judgekit.errors import JudgekitError, ModelUnavailable
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


@pytest.mark.local_model
def test_a_local_judge_is_its_weights_not_its_path(project, local_model, monkeypatch):
    """The setup of `local/m/judge.gguf` named the path alone: weights overwritten there passed
    the gate as the judge calibrated, and its cached answers were theirs."""
    import shutil

    from click.testing import CliRunner

    from judgekit.cli import app
    from judgekit.llm.protocol import Request
    from judgekit.llm.weights import weights, weights_file

    (project.root / "m").mkdir()
    copy = project.root / "m" / "judge.gguf"
    shutil.copyfile(weights_file("smollm2"), copy)
    source = (REPO / "calibration_sets" / "card-block-confirmed.jsonl").read_text().splitlines()
    criterion = (REPO / "criteria" / "card-block-confirmed.yaml").read_text()
    assert "model: local/smollm2" in criterion
    (project.criteria / "card-block-confirmed.yaml").write_text(
        criterion.replace("model: local/smollm2", "model: local/m/judge.gguf")
    )
    (project.sets / "card-block-confirmed.jsonl").write_text(
        "\n".join(source[:3] + source[-3:]) + "\n"
    )
    runner = CliRunner()
    done = runner.invoke(app, ["calibrate", "-q"])
    assert done.exit_code == 0, done.output
    request = Request(model="local/m/judge.gguf", messages=[{"role": "user", "content": "hi"}])
    before, key = weights("local/m/judge.gguf"), request.key_data()
    assert before == weights(local_model)  # the same bytes are the same judge, wherever they are
    first = runner.invoke(app, ["gate"])  # SmolLM2 is weak; but this is the judge measured
    assert "judge changed" not in first.output and "TPR" in first.output, first.output
    with copy.open("ab") as file:  # other weights at the same path
        file.write(b"\0" * 64)
    assert weights("local/m/judge.gguf") != before and request.key_data() != key
    moved = runner.invoke(app, ["gate"])
    assert moved.exit_code == 1 and "judge changed" in moved.output, moved.output


@pytest.mark.local_model
def test_weights_written_over_a_loaded_model_are_loaded_anew_not_answered_for(
    project, local_model, monkeypatch
):
    """The model was loaded once per path: weights replaced during a long process (a test
    session, the label server) were answered for by the ones held, and those answers cached under
    the new weights' digest, served next to a file that is not even a model."""
    import os
    import shutil

    from judgekit.llm.weights import weights_file

    monkeypatch.setenv("JUDGEKIT_LOCAL_THREADS", "1")
    (project.root / "m").mkdir()
    shutil.copyfile(weights_file("smollm2"), project.root / "m" / "judge.gguf")
    source = (REPO / "calibration_sets" / "card-block-confirmed.jsonl").read_text().splitlines()
    criterion = (REPO / "criteria" / "card-block-confirmed.yaml").read_text()
    (project.criteria / "card-block-confirmed.yaml").write_text(
        criterion.replace("model: local/smollm2", "model: local/m/judge.gguf")
    )
    (project.sets / "card-block-confirmed.jsonl").write_text(
        "\n".join(source[:3] + source[-3:]) + "\n"
    )
    options = Options(
        criteria_dir=project.criteria, sets_dir=project.sets, cache_dir=project.root / "cache"
    )
    assert measure(options).criteria[0].usage.calls == 6
    (project.root / "m" / "new.gguf").write_bytes(b"GGUF, but no model" * 1000)
    os.replace(project.root / "m" / "new.gguf", project.root / "m" / "judge.gguf")
    for _ in range(2):  # nothing was cached for the file there now: asked, and refused, again
        with pytest.raises(JudgekitError, match="local/m/judge.gguf"):
            measure(options)
