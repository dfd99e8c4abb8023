"""report.html as a person sees it: rendered in headless Chromium (Debian's chromium and
chromium-driver), read back as visible text, checked for inert hostile text and for no network."""

from __future__ import annotations

import os
import shutil
from datetime import UTC
from pathlib import Path

from judgekit.cli.html import to_html, write_html
from judgekit.gate import Gate
from judgekit.pipeline import Options, measure
from judgekit.testing import FakeLLM
from judgekit.watch.history import History, record_history
from tests.conftest import balanced, llm_criterion

HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


def _project(project, tmp_path):
    project.criterion(llm_criterion())
    examples = balanced(22, 22)
    examples[0] = {**examples[0], "output": f"reply-p0: blocked {HOSTILE}"}
    project.jsonl("says-blocked", examples)
    # p0 missed; f1, f10-f19 passed wrongly
    answers = {
        "reply-p0": False,
        "reply-f1": True,
        "reply-p": True,
    }

    def answer(request):
        reply = request.messages[-1]["content"]
        verdict = next(
            (v for k, v in answers.items() if f"{k}:" in reply or f"{k} " in reply or k in reply),
            False,
        )
        return (
            '{"reasoning": "Saw '
            + HOSTILE.replace('"', "'")
            + '", "passed": '
            + ("true" if verdict else "false")
            + "}"
        )

    history = tmp_path / "history.sqlite"
    for _ in range(2):
        report = record_history(
            measure(
                Options(
                    criteria_dir=project.criteria,
                    sets_dir=project.sets,
                    model="openai/j",
                    cache_dir=None,
                ),
                llm=FakeLLM(answer),
            ),
            history,
        )
    report.write(tmp_path / "out")
    decisions = (
        Gate.from_project(project.criteria, project.sets).check_path(tmp_path / "out").decisions
    )
    with History.open(history, create=False) as db:
        runs = {c.id: db.runs(c.id, purpose="calibrate") for c in report.criteria}
    return Path(
        write_html(report, tmp_path / "out", {d.criterion: d for d in decisions}, runs)
    ), report


def test_the_page_shows_decisions_charts_and_disagreements_and_runs_nothing(
    project, tmp_path, browser
):
    page, report = _project(project, tmp_path)
    browser.get(page.as_uri())
    text = browser.find_element("tag name", "body").text
    c = report.criteria[0]
    assert "says-blocked" in text and "gate " in text
    assert "Does the reply say the card is blocked?" in text  # the criterion's question
    assert f"Disagreements ({len(c.disagreements)})" in text
    # The hostile reply and reasoning are shown as text, and nothing in them ran.
    assert "<script>window.__pwned = 1</script>" in text
    assert browser.execute_script("return window.__pwned === undefined")
    assert (
        browser.execute_script("return document.querySelectorAll('main script, main img').length")
        == 0
    )
    # Self-contained: the page fetched nothing.
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    # The heatmap's four cells hold the confusion counts; the past-runs chart is there (two runs).
    cells = browser.execute_script(
        "return Array.from(document.querySelectorAll('section svg')[0].querySelectorAll('text'))"
        ".map(t => t.textContent)"
    )
    k = c.confusion
    assert [str(k.tp), str(k.fn), str(k.fp), str(k.tn)] == [t for t in cells if t.isdigit()]
    assert "PAST RUNS (2)" in text.upper()
    shot = tmp_path / "report.png"
    assert browser.save_screenshot(str(shot))
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[1] == 1300
    r, g, b = pixels[..., 0], pixels[..., 1], pixels[..., 2]
    red = ((r - g > 0.25) & (r - b > 0.25)).sum()
    green = ((g - r > 0.2) & (g - b > 0.1)).sum()
    assert red > 500 and green > 500  # the heatmap was drawn: disagreement red, agreement green
    if os.environ.get("JUDGEKIT_ARTIFACTS"):  # CI keeps the screenshot
        Path(os.environ["JUDGEKIT_ARTIFACTS"]).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(os.environ["JUDGEKIT_ARTIFACTS"]) / "report.png")


def test_a_report_without_gate_or_history_still_renders_every_text_escaped():
    from judgekit.report import ConfusionCounts, CriterionReport, Disagreement, Report

    c = CriterionReport(
        id="c",
        fingerprint="f",
        set_fingerprint="s",
        n=1,
        abstained=0,
        confusion=ConfusionCounts(tp=0, fp=1, tn=0, fn=0),
        metrics={"tpr": None},
        intervals={},
        disagreements=[
            Disagreement(id="<b>x</b>", label=False, verdict=True, output=HOSTILE, reason="&<>")
        ],
    )
    page = to_html(Report(criteria=[c]))
    assert (
        "<script>window" not in page and "&lt;script&gt;" in page and "&lt;b&gt;x&lt;/b&gt;" in page
    )
    assert "&amp;&lt;&gt;" in page and "not gated" in page and "undefined" in page


def test_past_runs_worse_than_chance_are_drawn_below_zero_not_clipped():
    import re
    from datetime import datetime

    from judgekit.cli.html import history_chart
    from judgekit.watch.history import HistoryRun

    runs = [
        HistoryRun(
            i,
            "c",
            datetime(2026, 11, i + 1, tzinfo=UTC),
            "calibrate",
            "f",
            "m",
            "p",
            {},
            "s",
            None,
            "live",
            10,
            0,
            {"cohen_kappa": k, "tpr": 0.5, "tnr": 0.5},
        )
        for i, k in enumerate((0.5, -1.0, 0.0))
    ]
    svg = history_chart(runs)
    kappa_line = re.search(r'stroke="#1d2330" stroke-width="2" points="([^"]+)"', svg).group(1)
    ys = [float(point.split(",")[1]) for point in kappa_line.split()]
    assert ys[1] > ys[2] > ys[0]  # -1 drawn lowest, then 0, then 0.5 (y grows downwards)
    assert ">-1<" in svg
