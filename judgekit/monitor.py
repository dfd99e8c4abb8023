"""Production monitoring: pass rates of judged samples per criterion per window, corrected for
the judge, with alerts on significant drops against the earlier windows.

The input (JSONL, CSV or Parquet; columns `timestamp`, `criterion`, `passed`, optional
`trace_id`) is read in chunks and folded into counts per (criterion, window) at once, so memory
is bounded by the number of windows, never by the number of rows. A window alerts when its pass
rate is significantly below the baseline (the pooled earlier windows) by more than `max_drop`, at
level `alpha` (judgekit.droptest: the score test, exact where the decision is close): an alert on
a rate, never on one verdict.

>>> round(drop_p_value(40, 100, 800, 1000, 0.05), 6)  # 40% against a baseline of 80%
0.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from judgekit.droptest import drop_p_value, drop_test
from judgekit.errors import InputError, Problem
from judgekit.metrics import NAN, wilson
from judgekit.policy import MonitorPolicy, parse_duration

if TYPE_CHECKING:
    import pandas as pd

    from judgekit.gate import GateResult
    from judgekit.report import Report

__all__ = ["MonitorPolicy", "read_counts", "watch", "drop_p_value"]
CHUNK_ROWS = 1_000_000
COLUMNS = ("timestamp", "criterion", "passed")
_EXPECTED = {"timestamp": "ISO 8601 text, or a column of numbers: epoch seconds, 1970 to 9999",
             "passed": "true, false or null: a JSON boolean, not text or a number",
             "criterion": "a criterion id, as text"}
_EXPECTED_CSV = {**_EXPECTED, "passed": "a boolean cell as calibration sets take it (true / false, pass / fail, "
                                        "yes / no, 1 / 0), or an empty cell for an abstention"}
_MISSING = "\0missing"  # a JSON line without the key (never a value a file can hold: JSON text has no NUL)
# Windows start on a Monday at 00:00 UTC (the epoch was a Thursday): 1970-01-05.
ORIGIN = 4 * 86400


@dataclass
class Counts:
    """Verdicts per (criterion, window start in seconds since the epoch): [passed, failed, abstained]."""

    window_s: float
    cells: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    rows: int = 0


def _chunks(path: Path) -> Iterator[tuple["pd.DataFrame", list[int] | None]]:
    """The file in chunks of rows, each with its rows' line numbers when they are not simply
    consecutive (None: row i of the file is on line i + 1, after a CSV's header line)."""
    import pandas as pd

    suffix = path.suffix.lower()
    if suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise InputError.one(path, "", "reading Parquet needs pyarrow: pip install 'judgekit[parquet]'") from None
        try:
            for batch in pq.ParquetFile(path).iter_batches(batch_size=CHUNK_ROWS):
                yield batch.to_pandas(), None
        except Exception as error:  # pyarrow raises its own error types for a damaged file
            raise InputError.one(path, "", f"is not a readable Parquet file: {error}") from None
        return
    try:
        if suffix == ".csv":
            for chunk in pd.read_csv(path, chunksize=CHUNK_ROWS, dtype={"criterion": str, "passed": str,
                                                                        "trace_id": str}, keep_default_na=False):
                yield chunk, None
        elif suffix in (".jsonl", ".json", ".ndjson"):
            yield from _jsonl_chunks(path)
        else:
            raise InputError.one(path, "", "unknown format; use .jsonl, .csv or .parquet")
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as error:
        raise InputError.one(path, "", f"cannot be read: {error}") from None
    except OSError as error:
        raise InputError.one(path, "", f"cannot be read: {error}") from None


def _jsonl_chunks(path: Path, rows: int = 200_000) -> Iterator[tuple["pd.DataFrame", list[int]]]:
    """JSON Lines in chunks: each chunk parsed in one `json.loads` call (twice as fast as a call per
    line); a chunk that does not parse is parsed again line by line to name the bad line."""
    import json
    from itertools import islice

    import pandas as pd

    with open(path, encoding="utf-8-sig") as handle:  # as every other reader: a byte-order mark is dropped
        first = 1
        while True:
            lines = list(islice(handle, rows))
            if not lines:
                return
            kept = [line for line in lines if line.strip()]
            try:
                records = json.loads("[" + ",".join(kept) + "]")
            except json.JSONDecodeError:
                records = None
            if records is None or not all(isinstance(r, dict) for r in records):
                for number, line in enumerate(lines, start=first):
                    try:
                        record = json.loads(line) if line.strip() else {}
                    except json.JSONDecodeError as error:
                        raise InputError.one(path, f"line {number}", f"is not JSON: {error.msg}") from None
                    if not isinstance(record, dict):
                        raise InputError.one(path, f"line {number}", "must be a JSON object")
            if not records:
                first += len(lines)
                continue
            # A missing key is not a null: `_MISSING` marks it, and the reader names the line.
            frame = pd.DataFrame({name: [r.get(name, _MISSING) for r in records] for name in COLUMNS},
                                 index=pd.RangeIndex(len(records)))
            # Line numbers for messages (pandas would deep-copy them through every operation in attrs).
            yield frame, [first + i for i, line in enumerate(lines) if line.strip()]
            first += len(lines)


def _passed(column: "pd.Series", text: bool) -> tuple["pd.Series", "pd.Series"]:
    """The verdict column as 1.0 / 0.0 / NaN (abstained), and a mask of unreadable values. In a
    CSV, the cells a calibration set takes (`parse_bool`) and the empty cell (an abstention); in
    JSON Lines and Parquet, booleans and null only."""
    import numpy as np
    import pandas as pd

    from judgekit.files import parse_bool

    if pd.api.types.is_bool_dtype(column):  # bool, or pandas' nullable boolean
        values = column.astype(float)
        return values, pd.Series(False, index=column.index)
    if text:
        def cell(value: str) -> float | None:
            read = parse_bool(value)
            return float("nan") if value == "" else float(read) if isinstance(read, bool) else None

        values = column.map({value: cell(value) for value in column.unique()}).astype(float)
        return values, values.isna() & column.ne("")
    if pd.api.types.is_numeric_dtype(column):  # 1 / 0 are not booleans; a null is NaN here
        return pd.Series(float("nan"), index=column.index), column.notna()
    kinds = column.map(type)
    is_bool = kinds.isin((bool, np.bool_))
    values = pd.Series(float("nan"), index=column.index)
    values[is_bool] = column[is_bool].astype(float)
    return values, ~is_bool & ~kinds.eq(type(None))


def _timestamps(column: "pd.Series") -> "pd.Series":
    """Seconds since the epoch (NaN where unreadable): a column of numbers is epoch seconds, text is
    ISO 8601 (without an offset it is taken as UTC). Times before 1970 or after 9999 are unreadable."""
    import pandas as pd

    if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
        seconds = column.astype(float)
    else:
        column = column.astype(str)  # a number among text is not read as epoch seconds: only a numeric column is
        try:
            parsed = pd.to_datetime(column, utc=True, format="ISO8601", errors="coerce")
        except (pd.errors.OutOfBoundsDatetime, OverflowError, ValueError, TypeError):
            parsed = pd.to_datetime(column.map(_one_timestamp), utc=True)  # value by value, to find the bad ones
        # Whole seconds in the parsed unit (pandas keeps years outside 1677-2262 in coarser units).
        values = parsed.dt.as_unit("s").array.asi8.astype(float)
        values[parsed.isna().to_numpy()] = float("nan")
        seconds = pd.Series(values, index=column.index)
    return seconds.where((seconds >= 0) & (seconds < _YEAR_10000))


_YEAR_10000 = 253_402_300_800


def _one_timestamp(value: Any) -> Any:
    import pandas as pd

    try:
        return pd.to_datetime(value, utc=True, format="ISO8601")
    except (pd.errors.OutOfBoundsDatetime, OverflowError, ValueError, TypeError):
        return pd.NaT


def read_counts(path: Path | str, window: str) -> Counts:
    """Fold a file of judged samples into counts per criterion and window, chunk by chunk."""
    import numpy as np

    path = Path(path)
    if not path.is_file():
        raise InputError.one(path, "", "no such file of judged samples")
    counts = Counts(parse_duration(window).total_seconds())
    # Where a bad row is: JSON Lines by line; CSV by data row (a quoted cell may span lines); Parquet by row.
    unit, first = {".csv": ("data row", 1), ".parquet": ("row", 0)}.get(path.suffix.lower(), ("line", 1))
    for chunk, lines in _chunks(path):
        missing = [c for c in COLUMNS if c not in chunk.columns]
        if missing:
            raise InputError.one(path, ", ".join(missing), "missing column; judged samples need timestamp, "
                                                           "criterion, passed (and optionally trace_id)")
        absent = {c: chunk[c].eq(_MISSING) if lines is not None else None for c in COLUMNS}  # JSON Lines only
        seconds = _timestamps(chunk["timestamp"])
        passed, bad_verdict = _passed(chunk["passed"], text=path.suffix.lower() == ".csv")
        criterion = chunk["criterion"]
        bad_criterion = criterion.isna() | (criterion.astype(str).str.strip() == "")
        if criterion.dtype == object:  # JSON may hold a number, a list, an object: a criterion id is text
            bad_criterion |= ~criterion.map(type).eq(str)
        for column, mask in absent.items():  # a missing key reads as unreadable, then is named as missing
            if mask is not None and mask.any():
                {"timestamp": seconds, "passed": bad_verdict, "criterion": bad_criterion}[column][mask] = (
                    float("nan") if column == "timestamp" else True)
        bad = seconds.isna() | bad_verdict | bad_criterion
        if bad.any():
            problems = []
            for index in np.flatnonzero(bad.to_numpy())[:20]:
                where = lines[index] if lines else first + counts.rows + int(index)
                what = ("timestamp" if math.isnan(seconds.iloc[index]) else
                        "passed" if bad_verdict.iloc[index] else "criterion")
                if absent[what] is not None and absent[what].iloc[index]:
                    message = "missing key" + ("; write null for an abstention" if what == "passed" else "")
                else:
                    value = chunk[what].iloc[index]
                    value = value.item() if hasattr(value, "item") else value  # numpy scalars shown as numbers
                    expected = _EXPECTED_CSV if path.suffix.lower() == ".csv" else _EXPECTED
                    message = f"{value!r} is not readable ({expected[what]})"
                problems.append(Problem(str(path), f"{unit} {where}: {what}", message))
            if int(bad.sum()) > 20:
                problems.append(Problem(str(path), "", f"and {int(bad.sum()) - 20} more unreadable rows"))
            raise InputError(problems)
        start = (np.floor((seconds.to_numpy() - ORIGIN) / counts.window_s) * counts.window_s + ORIGIN).astype("int64")
        kind = np.where(np.isnan(passed.to_numpy()), 2, 1 - np.nan_to_num(passed.to_numpy()).astype(int))
        frame = chunk.assign(_start=start, _kind=kind).groupby(["criterion", "_start", "_kind"]).size()
        for (name, window_start, k), number in frame.items():
            cell = counts.cells.setdefault((str(name), int(window_start)), [0, 0, 0])
            cell[int(k)] += int(number)
        counts.rows += len(chunk)
    if counts.rows == 0:
        raise InputError.one(path, "", "holds no judged samples")
    return counts


@dataclass(frozen=True)
class Window:
    criterion: str
    start: datetime
    passed: int
    failed: int
    abstained: int
    interval: tuple[float, float]
    corrected: float | None
    corrected_interval: tuple[float, float] | None
    baseline: float | None
    baseline_n: int
    p_value: float | None  # exact (an upper bound) where the decision is close; the score test's elsewhere
    alert: bool

    @property
    def decided(self) -> int:
        return self.passed + self.failed

    @property
    def rate(self) -> float:
        return self.passed / self.decided if self.decided else NAN


@dataclass(frozen=True)
class Watch:
    """Every window of every criterion, and the ones that alert."""

    windows: list[Window]
    policy: MonitorPolicy
    rows: int
    notes: list[str]

    @property
    def alerts(self) -> list[Window]:
        return [w for w in self.windows if w.alert]

    def recent_alerts(self, last: int = 1) -> list[Window]:
        """Alerts among each criterion's `last` windows: what an alerting tool acts on today."""
        out = []
        for name in {w.criterion for w in self.windows}:
            out += [w for w in [w for w in self.windows if w.criterion == name][-last:] if w.alert]
        return out

    def to_dict(self) -> dict[str, Any]:
        from judgekit.report import finite

        def one(w: Window) -> dict[str, Any]:
            return {"criterion": w.criterion, "start": w.start.isoformat(), "passed": w.passed, "failed": w.failed,
                    "abstained": w.abstained, "rate": finite(w.rate), "interval": [finite(x) for x in w.interval],
                    "corrected": finite(w.corrected),
                    "corrected_interval": [finite(x) for x in w.corrected_interval] if w.corrected_interval else None,
                    "baseline": finite(w.baseline), "baseline_n": w.baseline_n, "p_value": finite(w.p_value),
                    "alert": w.alert}

        return {"rows": self.rows, "policy": self.policy.model_dump(), "notes": self.notes,
                "alerts": [one(w) for w in self.alerts], "latest_alerts": [one(w) for w in self.recent_alerts()],
                "windows": [one(w) for w in self.windows]}

    def lines(self) -> list[str]:
        """What a person reads; criterion names from the file are escaped (`printable`)."""
        from judgekit.report import fmt_number, printable

        out = [f"{self.rows} judged samples, windows of {self.policy.window}; alert when a window's pass rate is "
               f"below its last {self.policy.baseline_windows} windows' by more than {self.policy.max_drop:.2f} "
               f"(score test, exact near alpha; alpha {self.policy.alpha})"]
        out += self.notes
        for name in sorted({w.criterion for w in self.windows}):
            out += ["", name, f"  {'window (UTC)':16}  {'n':>7}  {'rate':>5}  {'95%':>11}  {'corrected':>9}  "
                              f"{'baseline':>8}  {'p':>7}"]
            for w in (w for w in self.windows if w.criterion == name):
                interval = f"{fmt_number(w.interval[0], 2)}-{fmt_number(w.interval[1], 2)}"
                out.append(f"  {w.start:%Y-%m-%d %H:%M}  {w.decided:>7}  {fmt_number(w.rate, 2):>5}  {interval:>11}  "
                           f"{fmt_number(w.corrected, 2) if w.corrected is not None else '-':>9}  "
                           f"{fmt_number(w.baseline, 2) if w.baseline is not None else '-':>8}  "
                           f"{f'{w.p_value:.2g}' if w.p_value is not None else '-':>7}" + ("  ALERT" if w.alert else ""))
        alerts, latest = self.alerts, self.recent_alerts()
        out += ["", f"monitor: {len(alerts)} alert(s), {len(latest)} in a criterion's latest window" if alerts
                else "monitor: no alert"]
        return [printable(line) for line in out]

    def plot(self, path: Path | str) -> None:
        """A PNG of each criterion's pass rate over time, with its interval; alerts in red."""
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            raise InputError.one(path, "", "plotting needs matplotlib: pip install 'judgekit[plot]'") from None
        figure, axes = plt.subplots(figsize=(10, 4.5), dpi=100)
        for name in sorted({w.criterion for w in self.windows}):
            mine = [w for w in self.windows if w.criterion == name and w.decided]
            x = [w.start for w in mine]
            line, = axes.plot(x, [w.rate for w in mine], marker="o", label=name)
            axes.fill_between(x, [w.interval[0] for w in mine], [w.interval[1] for w in mine],
                              color=line.get_color(), alpha=0.15)
            alerts = [w for w in mine if w.alert]
            axes.scatter([w.start for w in alerts], [w.rate for w in alerts], color="red", zorder=3, s=60)
        axes.set_ylim(0, 1.02)
        axes.set_ylabel("judged pass rate")
        axes.set_title(f"pass rate per {self.policy.window} window (red: alert)")
        axes.legend(loc="lower left")
        figure.autofmt_xdate()
        try:
            figure.savefig(path, format="png")
        except OSError as error:
            raise InputError.one(path, "", f"cannot be written: {error}") from None
        finally:
            plt.close(figure)


def watch(counts: Counts, policy: MonitorPolicy, report: "Report | None" = None, gate: "GateResult | None" = None,
          notes: list[str] | None = None) -> Watch:
    """Rates, intervals, corrected rates and alerts for every (criterion, window) in `counts`.

    A criterion's rates are corrected with the report's TPR and TNR only when `gate` (the gate's
    decisions on that report: `Gate.from_project(...).check(report)`) passes it; a report the gate
    blocks (stale, too little evidence) is not trusted, and the rates are shown raw with the reason.
    """
    from judgekit.estimates import corrected_pass_rate

    windows, notes = [], list(notes or [])
    for name in sorted({criterion for criterion, _ in counts.cells}):
        calibrated = report.criterion(name) if report else None
        decision = gate.decision(name) if gate else None
        if report is not None and calibrated is None:
            notes.append(f"{name}: not in the calibration report; rates are not corrected for the judge")
        elif calibrated is not None and (decision is None or decision.status != "PASS"):
            why = (f"the gate says {decision.status}: {decision.summary}" if decision else
                   "no gate decision on it (no criterion file of that id to check the report against)")
            notes.append(f"warning: {name}: raw rates only, its calibration is not trusted: {why}")
            calibrated = None
        history: list[tuple[int, int]] = []  # (passed, decided) of the earlier windows
        for start in sorted(s for c, s in counts.cells if c == name):
            passed, failed, abstained = counts.cells[(name, start)]
            decided = passed + failed
            corrected = corrected_interval = None
            if calibrated is not None and decided:
                k = calibrated.confusion
                try:
                    rate = corrected_pass_rate(passed, decided, (k.tp, k.tp + k.fn), (k.tn, k.tn + k.fp))
                    if rate.identifiable:
                        corrected, corrected_interval = rate.corrected, rate.interval
                except ValueError:  # a report without both classes cannot correct anything
                    pass
            base = history[-policy.baseline_windows:]
            base_passed, base_n = sum(p for p, _ in base), sum(n for _, n in base)
            p_value, alert = None, False
            if base_n and decided:
                if decided >= policy.min_samples and base_n >= policy.min_samples:
                    p_value, alert = drop_test(passed, decided, base_passed, base_n, policy.max_drop, policy.alpha)
                else:  # shown, never acted on: the score test's p-value is enough
                    p_value = drop_p_value(passed, decided, base_passed, base_n, policy.max_drop)
            windows.append(Window(name, datetime.fromtimestamp(start, timezone.utc), passed, failed, abstained,
                                  wilson(passed, decided), corrected, corrected_interval,
                                  base_passed / base_n if base_n else None, base_n, p_value, alert))
            if decided and not alert:  # a window that alerted is not normal: it does not join the baseline
                history.append((passed, decided))
    return Watch(windows, policy, counts.rows, notes)
