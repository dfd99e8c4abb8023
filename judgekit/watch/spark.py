"""The counts of judged samples per criterion and window, computed on a PySpark DataFrame where
the samples are (a warehouse table as Spark reads it), for `judgekit monitor --counts`:

    from judgekit.watch.spark import counts
    counts(spark.table("analytics.judged"), "1d").toPandas().to_csv("counts.csv", index=False)

The frame has `timestamp` (a TimestampType), `criterion` (text) and `passed` (a BooleanType; null
is an abstention); the result has the columns `--counts` reads, on its window grid: the same
counts as `judgekit monitor --print-sql TABLE --dialect spark` and as judgekit's file reader.
PySpark is not a judgekit dependency: this module imports it when called.
"""

from __future__ import annotations

from typing import Any

from judgekit.watch.counts import window_seconds
from judgekit.watch.samples import COLUMNS, ORIGIN


def counts(frame: Any, window: str = "1d") -> Any:
    """A DataFrame of (criterion, window_start, verdicts, passes, abstentions), ordered."""
    from pyspark.sql import functions as F

    repeated = sorted({c for c in frame.columns if c in COLUMNS and frame.columns.count(c) > 1})
    if repeated:
        # Spark would refuse the ambiguous reference in its own words; a reader must not pick one
        raise ValueError(
            f"the frame has the column {repeated[0]!r} twice; select or rename one before counting"
        )
    w = window_seconds(window)
    seconds = F.unix_timestamp(F.col("timestamp"))
    start = (
        F.lit(ORIGIN) + F.floor((seconds - F.lit(ORIGIN)) / F.lit(w)).cast("bigint") * F.lit(w)
    ).cast("bigint")
    return (
        frame.groupBy(F.col("criterion"), start.alias("window_start"))
        .agg(
            F.count(F.lit(1)).alias("verdicts"),
            F.sum(F.when(F.col("passed"), 1).otherwise(0)).alias("passes"),
            F.sum(F.when(F.col("passed").isNull(), 1).otherwise(0)).alias("abstentions"),
        )
        .orderBy("criterion", "window_start")
    )
