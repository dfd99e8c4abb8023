"""Production monitoring: the drop test against statsmodels, the three input formats, windows and
alerts, the corrected rate, bad rows, the JSON output, the plot."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from judgekit.cli import app
from judgekit.errors import InputError
from judgekit.inputs.settings import MonitorPolicy
from judgekit.stats.droptest import drop_p_value
from judgekit.watch.monitor import watch
from judgekit.watch.samples import ORIGIN, Counts, read_counts

START = datetime(2026, 11, 1, tzinfo=UTC)


def _score_by_likelihood(x1, n1, x0, n0, max_drop):
    """The Farrington-Manning score p-value with the restricted rates found by maximising the
    likelihood numerically (baseline r0, window r0 - max_drop), not by the closed form."""
    from scipy.optimize import minimize_scalar
    from scipy.stats import norm

    def minus_log_likelihood(r0):
        r1 = r0 - max_drop
        return -(
            x0 * np.log(r0)
            + (n0 - x0) * np.log1p(-r0)
            + x1 * np.log(r1)
            + (n1 - x1) * np.log1p(-r1)
        )

    r0 = minimize_scalar(
        minus_log_likelihood,
        bounds=(max_drop + 1e-12, 1 - 1e-12),
        method="bounded",
        options={"xatol": 1e-13},
    ).x
    r1 = r0 - max_drop
    variance = r1 * (1 - r1) / n1 + r0 * (1 - r0) / n0
    return norm.cdf((x1 / n1 - x0 / n0 + max_drop) / np.sqrt(variance))


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 400), st.integers(1, 2000), st.data(), st.sampled_from([0.02, 0.05, 0.1, 0.2])
)
def test_the_score_test_s_restricted_rates_maximise_the_likelihood(n1, n0, data, max_drop):
    """statsmodels' closed form (score_test_proportions_2indep, compare="diff") has the baseline's
    pass count where its size belongs in one coefficient (statsmodels issue 10269), and judgekit's
    had the same: the check is against the likelihood itself."""
    x1, x0 = (
        data.draw(st.integers(1, n1 - 1)) if n1 > 1 else 0,
        data.draw(st.integers(1, n0 - 1)) if n0 > 1 else 0,
    )
    if not (0 < x1 < n1 and 0 < x0 < n0):
        return
    assert drop_p_value(x1, n1, x0, n0, max_drop) == pytest.approx(
        _score_by_likelihood(x1, n1, x0, n0, max_drop), abs=1e-6
    )


@pytest.mark.parametrize("baseline_rate", [0.9, 0.98])
def test_a_window_at_the_tolerated_drop_alerts_at_most_alpha_of_the_time(baseline_rate):
    """Window of 30 verdicts (min_samples), baseline of 210, window rate = baseline rate - max_drop:
    the chance of an alert, summed over every outcome, through `watch`. The score test alone
    alerted 1.57% (0.9) and 2.13% (0.98) of the time at alpha 1%."""
    policy = MonitorPolicy(baseline_windows=1)
    n1, n0, day = 30, 210, 86400
    from scipy.stats import binom

    window = binom.pmf(np.arange(n1 + 1), n1, baseline_rate - policy.max_drop)
    size = 0.0
    for x0 in range(n0 + 1):
        weight = binom.pmf(x0, n0, baseline_rate)
        if weight < 1e-12:
            continue
        for x1 in range(n1 + 1):
            counts = Counts(
                day,
                {("c", ORIGIN): [x0, n0 - x0, 0], ("c", ORIGIN + day): [x1, n1 - x1, 0]},
                n0 + n1,
            )
            if watch(counts, policy).windows[1].alert:
                size += weight * window[x1]
    assert 0.005 < size <= policy.alpha


def _rows(days=12, per_day=200, rate=0.9, drop_on=None, dropped=0.7, seed=0, criterion="card"):
    rng = np.random.default_rng(seed)
    rows = []
    for day in range(days):
        p = dropped if day == drop_on else rate
        for i in range(per_day):
            when = START + timedelta(days=day, seconds=int(rng.integers(0, 86400)))
            rows.append(
                {
                    "timestamp": when.isoformat(),
                    "criterion": criterion,
                    "passed": bool(rng.random() < p),
                    "trace_id": f"t{day}-{i}",
                }
            )
    return rows


def _write(rows, path):
    frame = pd.DataFrame(rows)
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif path.suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path)
    return path


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_each_format_gives_the_same_counts(tmp_path, suffix):
    rows = _rows(days=3, per_day=50)
    counts = read_counts(_write(rows, tmp_path / f"samples{suffix}"), "1d")
    day = int(START.timestamp())
    expected = {("card", day + 86400 * d): [0, 0, 0] for d in range(3)}
    for r in rows:
        start = day + 86400 * ((datetime.fromisoformat(r["timestamp"]) - START).days)
        expected[("card", start)][0 if r["passed"] else 1] += 1
    assert counts.cells == expected and counts.rows == 150


def test_a_drop_alerts_on_that_window_only_and_a_steady_rate_never_does(tmp_path):
    policy = MonitorPolicy()
    steady = watch(read_counts(_write(_rows(), tmp_path / "steady.jsonl"), "1d"), policy)
    assert steady.alerts == []
    dropped = watch(read_counts(_write(_rows(drop_on=10), tmp_path / "drop.jsonl"), "1d"), policy)
    assert [w.start for w in dropped.alerts] == [START + timedelta(days=10)]
    alert = dropped.alerts[0]
    assert alert.p_value < policy.alpha and alert.baseline_n == 7 * 200 and 0.6 < alert.rate < 0.8


def test_a_few_failing_verdicts_never_alert(tmp_path):
    rows = _rows(days=8)
    late = START + timedelta(days=8, hours=1)
    rows += [
        {"timestamp": late.isoformat(), "criterion": "card", "passed": False} for _ in range(5)
    ]
    result = watch(read_counts(_write(rows, tmp_path / "s.jsonl"), "1d"), MonitorPolicy())
    last = result.windows[-1]
    # significant, but 5 verdicts are not a rate
    assert last.rate == 0.0 and last.p_value < 0.01 and not last.alert


def test_abstentions_are_counted_apart(tmp_path):
    rows = [
        {"timestamp": START.isoformat(), "criterion": "c", "passed": p}
        for p in (True, False, None, True)
    ]
    counts = read_counts(_write(rows, tmp_path / "s.jsonl"), "1d")
    assert counts.cells == {("c", int(START.timestamp())): [2, 1, 1]}


def test_unreadable_rows_are_named_by_line_and_field(tmp_path):
    rows = _rows(days=1, per_day=5)
    rows[2]["passed"] = "maybe"
    rows[4]["timestamp"] = "yesterday"
    path = _write(rows, tmp_path / "s.csv")
    with pytest.raises(InputError) as error:
        read_counts(path, "1d")
    message = str(error.value)
    assert "s.csv:data row 3: passed: 'maybe' is not readable" in message
    assert "s.csv:data row 5: timestamp: 'yesterday' is not readable" in message
    (tmp_path / "bad.jsonl").write_text('{"timestamp": "2026-11-01", "passed": true}\n')
    with pytest.raises(InputError, match="bad.jsonl:line 1: criterion: missing key"):
        read_counts(tmp_path / "bad.jsonl", "1d")
    (tmp_path / "nopass.jsonl").write_text(
        '{"timestamp": "2026-11-01", "criterion": "c"}\n'
        '{"timestamp": "2026-11-01", "criterion": ["c"], "passed": true}\n'
    )
    with pytest.raises(InputError) as error:
        read_counts(tmp_path / "nopass.jsonl", "1d")
    assert "line 1: passed: missing key; write null for an abstention" in str(error.value)
    assert "line 2: criterion: ['c'] is not readable" in str(error.value)
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + json.dumps(rows[0]).encode() + b"\n")
    # a byte-order mark (Windows editors) is fine
    assert read_counts(tmp_path / "bom.jsonl", "1d").rows == 1
    (tmp_path / "blank.jsonl").write_text("\n\n")
    with pytest.raises(InputError, match="holds no judged samples"):
        read_counts(tmp_path / "blank.jsonl", "1d")
    (tmp_path / "ms.csv").write_text("timestamp,criterion,passed\n1767225600000,c,true\n")
    with pytest.raises(InputError, match="data row 1: timestamp: 1767225600000 is not readable"):
        read_counts(tmp_path / "ms.csv", "1d")
    (tmp_path / "s.txt").write_text("x")
    with pytest.raises(InputError, match="unknown format"):
        read_counts(tmp_path / "s.txt", "1d")


def test_cli_json_exit_code_corrected_rate_and_plot(tmp_path, project):
    from judgekit.pipeline import Options, measure

    # A judge that fails 3 of 33 known-good replies and passes no known-bad one: rates get
    # corrected upward (the gate, on point estimates here, passes it: a report corrects only what
    # the gate passes).
    (tmp_path / "judgekit.yaml").write_text("gate: {use_lower_bound: false}\n")
    project.criterion({"id": "card", "question": "Blocked?"})
    project.jsonl(
        "card",
        [{"id": f"g{i}", "output": f"reply-p{i}", "passed": True} for i in range(30)]
        + [{"id": f"b{i}", "output": f"reply-f{i}", "passed": i < 3} for i in range(30)],
    )
    from judgekit.testing import FakeLLM

    report = measure(
        Options(
            criteria_dir=project.criteria, sets_dir=project.sets, model="openai/j", cache_dir=None
        ),
        llm=FakeLLM.scripted({"reply-p": True}, default=False),
    )
    report.write(tmp_path / "report")
    samples = _write(_rows(drop_on=11), tmp_path / "samples.jsonl")  # the latest of 12 days drops
    result = CliRunner().invoke(
        app,
        [
            "monitor",
            str(samples),
            "--report",
            str(tmp_path / "report"),
            "--json",
            "--plot",
            str(tmp_path / "rate.png"),
        ],
    )
    assert result.exit_code == 1, result.output
    data = json.loads(result.output)
    assert (
        len(data["alerts"]) == len(data["latest_alerts"]) == 1
        and data["rows"] == 2400
        and len(data["windows"]) == 12
    )
    # A drop that has passed is listed but no longer acted on, unless asked to look further back.
    earlier = _write(_rows(drop_on=9), tmp_path / "earlier.jsonl")
    assert CliRunner().invoke(app, ["monitor", str(earlier)]).exit_code == 0
    assert CliRunner().invoke(app, ["monitor", str(earlier), "--recent", "3"]).exit_code == 1
    first = data["windows"][0]
    # Rogan-Gladen with TPR 30/33 and TNR 27/27: (raw + 1 - 1) / (30/33), within rounding
    # of the centring.
    assert first["corrected"] == pytest.approx(min(1.0, first["rate"] * 33 / 30), abs=0.01)
    png = (tmp_path / "rate.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image

    assert matplotlib.image.imread(tmp_path / "rate.png").shape[:2] == (450, 1000)
    quiet = CliRunner().invoke(
        app, ["monitor", str(_write(_rows(), tmp_path / "ok.csv")), "--window", "2d"]
    )
    assert quiet.exit_code == 0 and "monitor: no alert" in quiet.output
    assert (
        "no calibration report at .judgekit/reports/latest: rates are not corrected" in quiet.output
    )
    other = _write(_rows(days=2, criterion="other"), tmp_path / "other.jsonl")
    missing = CliRunner().invoke(app, ["monitor", str(other), "--report", str(tmp_path / "report")])
    assert (
        missing.exit_code == 0
        and "other: not in the calibration report; rates are not corrected" in missing.output
    )
    bad = CliRunner().invoke(app, ["monitor", str(samples), "--window", "often"])
    assert bad.exit_code == 2 and "often" in bad.output


def test_a_report_the_gate_blocks_corrects_nothing_and_says_why(tmp_path, project):
    """Corrected 1.00 while the raw rate fell from 0.91 to 0.79: a stale report must not correct."""
    from judgekit.pipeline import Options, measure
    from judgekit.testing import FakeLLM

    project.criterion({"id": "card", "question": "Blocked?"})
    project.jsonl(
        "card",
        [{"id": f"g{i}", "output": f"reply-p{i}", "passed": True} for i in range(60)]
        + [{"id": f"b{i}", "output": f"reply-f{i}", "passed": False} for i in range(60)],
    )
    measure(
        Options(
            criteria_dir=project.criteria, sets_dir=project.sets, model="openai/j", cache_dir=None
        ),
        llm=FakeLLM.scripted({"reply-p": True}, default=False),
    ).write(tmp_path / "report")
    samples = _write(_rows(drop_on=11, rate=0.91, dropped=0.79), tmp_path / "s.jsonl")
    command = ["monitor", str(samples), "--report", str(tmp_path / "report"), "--json"]
    trusted = json.loads(CliRunner().invoke(app, command).output)
    assert all(w["corrected"] is not None for w in trusted["windows"]) and trusted["notes"] == []

    # the judge changed since
    project.criterion({"id": "card", "question": "Blocked, and said so?"})
    stale = CliRunner().invoke(app, command)
    assert stale.exit_code == 1, stale.output  # the drop still alerts, on the raw rates
    data = json.loads(stale.output)
    assert all(w["corrected"] is None and w["corrected_interval"] is None for w in data["windows"])
    assert data["notes"] == [
        "warning: card: raw rates only, its calibration is not trusted: the gate says FAIL: the "
        "criterion's judge changed since it was calibrated: its prompt (what the judge is sent "
        "besides the example); run `judgekit calibrate` again"
    ]
    text = CliRunner().invoke(app, command[:-1]).output
    assert "warning: card: raw rates only" in text and "changed since it was calibrated" in text

    unreadable = CliRunner().invoke(app, [*command, "--criteria", str(tmp_path / "nowhere")])
    data = json.loads(unreadable.output)
    assert all(w["corrected"] is None for w in data["windows"])
    assert data["notes"][0].startswith(
        f"warning: raw rates only: the calibration report cannot be checked against "
        f"{tmp_path / 'nowhere'} and calibration_sets:"
    )


def test_an_explicit_report_that_is_not_there_is_refused(tmp_path):
    samples = _write(_rows(days=2), tmp_path / "s.jsonl")
    result = CliRunner().invoke(app, ["monitor", str(samples), "--report", "/nonexistent"])
    assert result.exit_code == 2
    assert (
        "/nonexistent:--report: no calibration report here; give the folder (or its report.json) "
        "that `judgekit calibrate` wrote, or leave --report out for raw rates" in result.output
    )
    # the default, absent, is fine
    assert CliRunner().invoke(app, ["monitor", str(samples)]).exit_code == 0


def test_criterion_names_from_the_file_cannot_drive_the_terminal(tmp_path):
    rows = _rows(days=2, per_day=40, criterion="café\x1b]0;owned\x07") + _rows(
        days=2, per_day=40, criterion="日本\u202e"
    )
    result = CliRunner().invoke(app, ["monitor", str(_write(rows, tmp_path / "s.jsonl"))])
    assert result.exit_code == 0, result.output
    assert not any(ch in result.output for ch in "\x1b\x07\u202e")
    assert "café\\x1b]0;owned\\x07" in result.output and "日本\\u202e" in result.output


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_verdicts_are_booleans_or_null_as_in_calibration_sets(tmp_path, suffix):
    rows = [
        {"timestamp": START.isoformat(), "criterion": "c", "passed": p}
        for p in (True, False, None, True)
    ]
    assert read_counts(_write(rows, tmp_path / f"ok{suffix}"), "1d").cells == {
        ("c", int(START.timestamp())): [2, 1, 1]
    }
    where = "line 1" if suffix == ".jsonl" else "row 0"
    # a Parquet column has one type
    for values in (
        ["yes", "no"],
        [1, 0],
        ["true", "false"],
        [1.0, 0.0],
    ):
        bad = [{"timestamp": START.isoformat(), "criterion": "c", "passed": v} for v in values]
        with pytest.raises(InputError) as error:
            read_counts(_write(bad, tmp_path / f"bad{suffix}"), "1d")
        assert (
            f"{where}: passed: {values[0]!r} is not readable (true, false or null: a JSON boolean, "
            "not text or a number)" in str(error.value)
        )
    if suffix == ".jsonl":  # one odd value among booleans is named by its line
        (tmp_path / "mixed.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in rows)
            + json.dumps({**rows[0], "passed": "yes"})
            + "\n"
        )
        with pytest.raises(InputError, match="mixed.jsonl:line 5: passed: 'yes' is not readable"):
            read_counts(tmp_path / "mixed.jsonl", "1d")


def test_csv_verdicts_are_the_cells_calibration_sets_take(tmp_path):
    from judgekit.inputs.files import parse_bool

    words = ["true", "False", " yes ", "no", "PASS", "failed", "1", "0", ""]
    (tmp_path / "ok.csv").write_text(
        "timestamp,criterion,passed\n" + "".join(f"{START.isoformat()},c,{w}\n" for w in words)
    )
    counts = read_counts(tmp_path / "ok.csv", "1d")
    passed = sum(1 for w in words if parse_bool(w) is True)
    assert counts.cells == {("c", int(START.timestamp())): [passed, len(words) - 1 - passed, 1]}
    for cell in ("maybe", "null", "nan", "1.0", "y"):
        (tmp_path / "bad.csv").write_text(
            f"timestamp,criterion,passed\n{START.isoformat()},c,true\n"
            f"{START.isoformat()},c,{cell}\n"
        )
        assert parse_bool(cell) == cell  # a calibration set would refuse it too
        with pytest.raises(InputError) as error:
            read_counts(tmp_path / "bad.csv", "1d")
        assert (
            f"bad.csv:data row 2: passed: '{cell}' is not readable (a boolean cell as calibration "
            "sets take it" in str(error.value)
        )
