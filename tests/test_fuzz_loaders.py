"""Every loader, fed random structures and random bytes, either loads or raises InputError that
names the file — never another exception."""

import json
import os
import string

import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from judgekit.errors import InputError
from judgekit.inputs.criteria import load_criterion
from judgekit.inputs.policy import Policy
from judgekit.inputs.sets import load_set
from judgekit.judging.recorded import load_recorded
from judgekit.report import Report

KEYS = [
    "id",
    "question",
    "kind",
    "pattern",
    "match_means",
    "inputs",
    "examples",
    "judge",
    "output",
    "input",
    "passed",
    "labels",
    "tags",
    "split",
    "model",
    "trials",
    "prompt",
    "criterion",
    "trial",
    "min_tpr",
    "criteria",
    "max_age",
    "reason",
    "context",
    "field",
    "ignore_case",
    "temperature",
]
leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=True),
    st.text(string.printable, max_size=12),
    st.sampled_from(["llm", "regex", "pass", "fail", "dev", "(", "{{output}}", "30d", "c"]),
)
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=6)
    ),
    max_leaves=20,
)
records = st.dictionaries(st.sampled_from(KEYS), values, max_size=8)
FUZZ = settings(
    max_examples=int(os.environ.get("JUDGEKIT_FUZZ_EXAMPLES", "120")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def loads_or_names_the_file(load, path):
    try:
        load(path)
    except InputError as error:
        assert str(path) in str(error) or path.name in str(error)


@FUZZ
@given(document=values)
def test_criterion_files(tmp_path, document):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(document))
    loads_or_names_the_file(load_criterion, path)


@FUZZ
@given(rows=st.lists(records, max_size=5), suffix=st.sampled_from([".jsonl", ".yaml", ".csv"]))
def test_calibration_sets(tmp_path, rows, suffix):
    path = tmp_path / f"c{suffix}"
    if suffix == ".jsonl":
        path.write_text("".join(json.dumps(r, allow_nan=True) + "\n" for r in rows))
    elif suffix == ".yaml":
        path.write_text(yaml.safe_dump(rows))
    else:
        columns = sorted({k for r in rows for k in r}) or ["id"]
        lines = [",".join(columns)] + [
            ",".join(str(r.get(k, "")).replace(",", ";").replace("\n", " ") for k in columns)
            for r in rows
        ]
        path.write_text("\n".join(lines) + "\n")
    loads_or_names_the_file(lambda p: load_set(p, "c"), path)


@FUZZ
@given(rows=st.lists(records, max_size=5), suffix=st.sampled_from([".jsonl", ".csv"]))
def test_verdict_files(tmp_path, rows, suffix):
    path = tmp_path / f"v{suffix}"
    if suffix == ".jsonl":
        path.write_text("".join(json.dumps(r, allow_nan=True) + "\n" for r in rows))
    else:
        columns = sorted({k for r in rows for k in r}) or ["id"]
        path.write_text(
            "\n".join(
                [",".join(columns)]
                + [
                    ",".join(
                        str(r.get(k, "")).replace(",", ";").replace("\n", " ") for k in columns
                    )
                    for r in rows
                ]
            )
        )
    loads_or_names_the_file(load_recorded, path)


@FUZZ
@given(
    data=st.binary(max_size=200),
    which=st.sampled_from(["criterion", "set", "verdicts", "report", "policy"]),
)
def test_random_bytes(tmp_path, data, which):
    names = {
        "criterion": "c.yaml",
        "set": "c.jsonl",
        "verdicts": "v.csv",
        "report": "report.json",
        "policy": "judgekit.yaml",
    }
    path = tmp_path / names[which]
    path.write_bytes(data)
    load = {
        "criterion": load_criterion,
        "set": lambda p: load_set(p, "c"),
        "verdicts": load_recorded,
        "report": Report.read,
        "policy": lambda p: Policy.load(p),
    }[which]
    loads_or_names_the_file(load, path)


@FUZZ
@given(document=values)
def test_reports_and_policies(tmp_path, document):
    report = tmp_path / "report.json"
    report.write_text(json.dumps(document, allow_nan=True))
    loads_or_names_the_file(Report.read, report)
    policy = tmp_path / "judgekit.yaml"
    policy.write_text(yaml.safe_dump({"gate": document}))
    loads_or_names_the_file(lambda p: Policy.load(p), policy)


def test_yaml_tags_that_would_run_code_are_refused(tmp_path):
    import pytest

    path = tmp_path / "c.yaml"
    marker = tmp_path / "ran"
    path.write_text(f"id: !!python/object/apply:os.system ['touch {marker}']\nquestion: q?\n")
    with pytest.raises(InputError, match="is not valid YAML"):
        load_criterion(path)
    assert not marker.exists()
