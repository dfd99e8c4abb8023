"""The report on disk: several writers of one folder, and the newer calibration of a criterion."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from judgekit.pipeline import Options, measure
from judgekit.report import Report
from tests.conftest import REPO


def _regex_project(project, ids, n=300):
    for cid in ids:
        project.criterion(
            {
                "id": cid,
                "kind": "regex",
                "question": "Free of TODO?",
                "pattern": "TODO",
                "match_means": "fail",
            }
        )
        project.jsonl(
            cid,
            [
                {
                    "id": f"{cid}-{i}",
                    "output": f"TODO {i}" if i % 2 else f"done {i}",
                    "passed": not i % 2,
                }
                for i in range(n)
            ],
        )


def test_concurrent_partial_runs_into_one_folder_keep_both_criteria(project):
    _regex_project(project, ["a", "b"])
    out = project.root / "out"
    command = [
        sys.executable,
        "-m",
        "judgekit.cli",
        "calibrate",
        "--out",
        str(out),
        "--no-history",
        "-q",
    ]
    env = {"PYTHONPATH": str(REPO)}
    import os

    for attempt in range(6):
        runs = [
            subprocess.Popen(
                [*command, "-c", cid],
                cwd=project.root,
                env={**os.environ, **env},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for cid in ("a", "b")
        ]
        for run in runs:
            assert run.wait(120) == 0, run.stderr.read()
        report = Report.read(out)
        assert sorted(c.id for c in report.criteria) == ["a", "b"], f"attempt {attempt}"
        lines = [json.loads(line) for line in (out / "verdicts.jsonl").read_text().splitlines()]
        assert {cid: sum(1 for r in lines if r["criterion"] == cid) for cid in ("a", "b")} == {
            "a": 300,
            "b": 300,
        }


def test_an_older_calibration_never_replaces_a_newer_one(project):
    _regex_project(project, ["a"], n=6)
    options = Options(criteria_dir=project.criteria, sets_dir=project.sets)
    older = measure(options)  # read the set first ...
    project.jsonl(
        "a",
        [
            {"id": f"a-{i}", "output": f"TODO {i}" if i % 3 else f"done {i}", "passed": not i % 3}
            for i in range(9)
        ],
    )
    newer = measure(options)  # ... then the set changed and was calibrated again
    out = project.root / "out"
    newer.write(out)
    older.write(out, merge=True)  # the slower, older run finishes last
    kept = Report.read(out).criterion("a")
    assert kept.n == 9 and kept.calibrated_at == newer.criteria[0].calibrated_at
    assert len((out / "verdicts.jsonl").read_text().splitlines()) == 9
    older.write(out)  # a whole run that started earlier does not replace it either
    assert Report.read(out).criterion("a").n == 9


def _annotated_project(project, annotated: int):
    from tests.conftest import llm_criterion

    project.criterion(llm_criterion())
    rows = [
        {
            "id": f"a{i}",
            "output": f"reply-p{i}",
            "labels": {"ana": True, "ben": i % 5 != 0, "eve": True},
        }
        for i in range(annotated)
    ]
    rows += [{"id": f"p{i}", "output": f"reply-q{i}", "passed": True} for i in range(20)]
    rows += [{"id": f"f{i}", "output": f"reply-f{i}", "passed": False} for i in range(20)]
    project.jsonl("says-blocked", rows)


@pytest.mark.parametrize("annotated, too_few", [(3, True), (25, False)])
def test_the_human_ceiling_says_on_how_many_examples(project, annotated, too_few):
    from judgekit.report import to_markdown
    from judgekit.testing import FakeLLM

    _annotated_project(project, annotated)
    report = measure(
        Options(
            criteria_dir=project.criteria, sets_dir=project.sets, model="openai/j", cache_dir=None
        ),
        llm=FakeLLM.scripted({"reply-p": True, "reply-q": True}, default=False),
    )
    a = report.criteria[0].annotators
    assert a.examples == annotated
    line = next(
        line for line in to_markdown(report).splitlines() if line.startswith("Human ceiling")
    )
    assert f"on {annotated} examples labelled by several annotators" in line
    assert ("too few to compare the judge with (at least 20 are needed)" in line) == too_few
    assert ("the judge against each" in line) != too_few


def test_report_md_shows_each_disagreement_beside_its_example(project):
    from judgekit.report import to_markdown
    from judgekit.testing import FakeLLM
    from tests.conftest import llm_criterion

    project.criterion(llm_criterion())
    long_reply = "reply-f0: " + "blah " * 100 + "<b>END</b>"
    project.jsonl(
        "says-blocked",
        [
            {"id": "p0", "input": "I lost my card", "output": "reply-p0: blocked", "passed": True},
            {"id": "f0", "input": "Where is it?", "output": long_reply, "passed": False},
        ],
    )
    # passes everything: f0 is a disagreement
    report = measure(
        Options(
            criteria_dir=project.criteria, sets_dir=project.sets, model="openai/j", cache_dir=None
        ),
        llm=FakeLLM.scripted({}, default=True),
    )
    row = next(line for line in to_markdown(report).splitlines() if line.startswith("| f0 |"))
    # cut at 200 characters
    assert "| Where is it? | reply-f0: blah" in row and "END" not in row and "…" in row
    assert "texts cut at 200 characters" in to_markdown(report)


def test_examples_frame_has_one_row_per_example_fresh_and_read_back(project):
    from judgekit.testing import FakeLLM
    from tests.conftest import llm_criterion

    project.criterion(llm_criterion())
    project.jsonl(
        "says-blocked",
        [
            {"id": "p0", "output": "reply-p0", "passed": True, "tags": ["short"], "split": "dev"},
            {"id": "f0", "output": "reply-f0", "passed": False},
            {"id": "f1", "output": "reply-f1", "passed": False, "split": "test"},
        ],
    )
    report = measure(
        Options(
            criteria_dir=project.criteria,
            sets_dir=project.sets,
            model="openai/j",
            cache_dir=None,
            trials=3,
        ),
        llm=FakeLLM.scripted({"reply-p": True, "reply-f0": True}, default=False),
    )
    fresh = report.examples_frame(project.sets).set_index("id")
    assert sorted(fresh.index) == ["f0", "f1", "p0"]
    assert not fresh.loc["f0", "label"] and fresh.loc["f0", "verdict"]  # a disagreement
    assert fresh.loc["p0", "trials"] == (True, True, True) and fresh.loc["p0", "tags"] == ("short",)
    assert fresh.loc["f1", "split"] == "test" and not fresh.loc["f1", "verdict"]
    out = project.root / "out"
    report.write(out)
    again = Report.read(out)
    # report.json does not hold them: they come from verdicts.jsonl beside it
    assert not again.criteria[0].verdicts
    back = again.examples_frame(project.sets).set_index("id").sort_index()
    assert back[["label", "verdict", "trials", "split"]].equals(
        fresh.sort_index()[["label", "verdict", "trials", "split"]]
    )


def _k_of_n_project(project, labels_of, repeat=1):
    from tests.conftest import llm_criterion

    project.criterion(llm_criterion())
    rows = [
        {"id": f"a{i}", "output": f"reply-p{i}", "labels": labels_of(i)} for i in range(len(SIX))
    ]
    if repeat > 1:  # the same design, repeated under new ids (the ceiling needs 20 examples)
        rows = [
            dict(r, id=f"{r['id']}-{k}", output=f"{r['output']}-{k}")
            for k in range(repeat)
            for r in rows
        ]
    rows += [{"id": f"p{i}", "output": f"reply-q{i}", "passed": True} for i in range(20)]
    rows += [{"id": f"f{i}", "output": f"reply-f{i}", "passed": False} for i in range(20)]
    project.jsonl("says-blocked", rows)


# six examples, four annotators, three labels each (each example left out by one annotator)
SIX = [(1, 1, 0), (0, 0, 0), (1, 1, 1), (1, 0, 1), (0, 0, 1), (1, 1, 1)]
FOUR = ("ana", "ben", "eve", "ida")


def _calibrated(project):
    from judgekit.testing import FakeLLM

    return measure(
        Options(
            criteria_dir=project.criteria, sets_dir=project.sets, model="openai/j", cache_dir=None
        ),
        llm=FakeLLM.scripted({"reply-p": True, "reply-q": True}, default=False),
    )


def test_fleiss_kappa_over_k_of_n_annotators_is_statsmodels(project):
    """Issue 34, item 2: Fleiss' kappa needs as many labels on every example, not the same
    annotators; with three of four on each it was null."""
    import numpy as np
    from statsmodels.stats.inter_rater import fleiss_kappa

    def labels_of(i):
        names = [n for j, n in enumerate(FOUR) if j != i % 4]  # one annotator left out
        return {n: bool(v) for n, v in zip(names, SIX[i], strict=True)}

    _k_of_n_project(project, labels_of)
    a = _calibrated(project).criteria[0].annotators
    table = np.array([[sum(r), 3 - sum(r)] for r in SIX])
    assert a.fleiss_kappa == pytest.approx(fleiss_kappa(table))
    assert a.fleiss_examples == 6
    assert a.fleiss_why_not is None and a.examples == 6


def test_fleiss_kappa_is_not_shown_where_labels_per_example_vary(project):
    """Issue 34, item 2: where a third annotator adjudicated only some examples, Fleiss' kappa was
    computed over those few as if over all; it is undefined, saying why, and every figure shows
    its n."""
    from judgekit.report import to_markdown

    def labels_of(i):
        two = {"ana": bool(SIX[i][0]), "ben": bool(SIX[i][1])}
        return two | ({"eve": bool(SIX[i][2])} if SIX[i][0] != SIX[i][1] else {})

    _k_of_n_project(project, labels_of, repeat=4)
    report = _calibrated(project)
    a = report.criteria[0].annotators
    assert a.fleiss_kappa is None and a.fleiss_examples == 0
    assert a.fleiss_why_not.startswith("the examples have 2 to 3 labels each")
    assert a.pairwise_examples == {"ana~ben": 24, "ana~eve": 4, "ben~eve": 4}
    line = next(
        line for line in to_markdown(report).splitlines() if line.startswith("Human ceiling")
    )
    assert "ana~ben 0.67 (n=24)" in line and "Fleiss n/a: the examples have 2 to 3" in line
    assert "alpha" in line and "(n=24)" in line
