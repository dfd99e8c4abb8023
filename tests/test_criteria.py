from pathlib import Path

import pytest

from judgekit.criteria import (LLMCriterion, RegexCriterion, fingerprint, load_criteria, load_criterion,
                               prompt_template, render)
from judgekit.errors import InputError
from tests.conftest import REPO, llm_criterion


def test_bundled_criteria_load():
    criteria = load_criteria(REPO / "criteria")
    kinds = {c.id: c.kind for c in criteria}
    assert kinds["card-block-confirmed"] == "llm" and kinds["no-email-address"] == "regex"


def test_unknown_keys_and_every_problem_listed_at_once(project):
    path = project.criterion({"id": "x", "questoin": "typo?", "judge": {"temprature": 0}}, name="x")
    with pytest.raises(InputError) as caught:
        load_criterion(path)
    text = str(caught.value)
    assert str(path) in text
    assert "questoin: unknown key" in text
    assert "judge.temprature: unknown key" in text
    assert "question: required key is missing" in text
    assert len(caught.value.problems) == 3


def test_id_must_match_file_name(project):
    path = project.criterion(llm_criterion("other-id"), name="file-name")
    with pytest.raises(InputError, match=r"file-name.yaml:id: is 'other-id'"):
        load_criterion(path)


def test_bad_regex_and_bad_kind_are_named(project):
    path = project.criterion({"id": "r", "kind": "regex", "question": "ok?", "pattern": "(", "match_means": "fail"})
    with pytest.raises(InputError, match=r"r.yaml:pattern: .*not a valid regular expression"):
        load_criterion(path)
    path = project.criterion({"id": "k", "kind": "vibes", "question": "ok?"})
    with pytest.raises(InputError, match=r"k.yaml"):
        load_criterion(path)


def test_unknown_placeholder_in_prompt_override(project):
    path = project.criterion(llm_criterion("p", judge={"prompt": "Judge {{reply}}"}))
    with pytest.raises(InputError, match=r"judge.prompt: .*unknown placeholder"):
        load_criterion(path)


def test_invalid_yaml_names_the_line(project):
    path = project.criteria / "broken.yaml"
    path.write_text("id: broken\nquestion: [unclosed\n")
    with pytest.raises(InputError, match=r"broken.yaml:line \d+: is not valid YAML"):
        load_criterion(path)


def test_all_files_problems_reported_together(project):
    project.criterion({"id": "a"})
    project.criterion({"id": "b"})
    with pytest.raises(InputError) as caught:
        load_criteria(project.criteria)
    assert {Path(p.source).name for p in caught.value.problems} == {"a.yaml", "b.yaml"}


def test_regex_check_and_reason():
    c = RegexCriterion(id="no-email", kind="regex", question="free of emails?", pattern=r"\S+@\S+", match_means="fail")
    assert c.explain({"output": "mail a@b.c"}) == (False, "output matches 'a@b.c'")
    assert c.explain({"output": "no mail"}) == (True, "no match in output")


def test_prompt_renders_example_fields_once():
    c = LLMCriterion(id="c", question="Is it polite?", inputs=["input", "output"])
    messages = render(prompt_template(c), {"input": "hi {{output}}", "output": "bye", "context": None})
    user = messages[-1]["content"]
    assert "hi {{output}}" in user, "example text must not be re-expanded"
    assert "<output>\nbye\n</output>" in user and "Is it polite?" in user


def test_fingerprint_changes_with_prompt_model_and_parameters():
    base = LLMCriterion(id="c", question="Is it polite?")
    prints = {
        fingerprint(base, "m1"),
        fingerprint(base, "m2"),
        fingerprint(base.model_copy(update={"question": "Is it rude?"}), "m1"),
        fingerprint(base.model_copy(update={"judge": base.judge.model_copy(update={"temperature": 0.7})}), "m1"),
    }
    assert len(prints) == 4
    assert fingerprint(base, "m1") == fingerprint(LLMCriterion(id="c", question="Is it polite?"), "m1")


def test_a_key_written_twice_is_refused_not_read_last_wins(project):
    path = project.criteria / "r.yaml"
    path.write_text("id: r\nkind: regex\nquestion: Is it free of emails?\npattern: '@'\nmatch_means: fail\n"
                    "match_means: pass\n")
    with pytest.raises(InputError) as caught:
        load_criterion(path)
    [problem] = caught.value.problems
    assert (problem.source, problem.location) == (str(path), "line 6")
    assert "key 'match_means' twice (first at line 5)" in problem.message
