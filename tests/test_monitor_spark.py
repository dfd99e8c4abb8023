"""The counts on a local SparkSession (judgekit.watch.spark): the DataFrame's, and those of the
query `judgekit monitor --print-sql TABLE --dialect spark` prints, run by Spark SQL, equal
DuckDB's and the file reader's on the same samples. Needs pyspark and a Java runtime (.ci/run
installs both)."""

from __future__ import annotations

import shutil

import pytest

from judgekit.watch.counts import counts_sql
from judgekit.watch.samples import read_counts
from tests.conftest import require
from tests.test_monitor_counts import _samples

try:
    import pyspark  # noqa: F401
except ImportError:
    pyspark = None


@pytest.fixture(scope="module")
def spark():
    require(pyspark is not None, "pyspark is not installed (pip install pyspark)")
    require(
        shutil.which("java") is not None,
        "no Java runtime for Spark (apt-get install default-jre-headless)",
    )
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[1]")
        .appName("judgekit-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    yield session
    session.stop()


def _cells(rows):
    return {
        (r["criterion"], int(r["window_start"])): [
            int(r["passes"]),
            int(r["verdicts"] - r["passes"] - r["abstentions"]),
            int(r["abstentions"]),
        ]
        for r in rows
    }


@pytest.mark.parametrize("window", ["6h", "1d", "1w"])
def test_spark_counts_as_the_file_reader_and_the_printed_query_do(spark, tmp_path, window):
    from pyspark.sql import functions as F

    from judgekit.watch.spark import counts

    samples = _samples(tmp_path)
    frame = spark.read.json(str(samples)).select(
        F.to_timestamp("timestamp").alias("timestamp"),
        "criterion",
        F.col("passed").cast("boolean").alias("passed"),
    )
    folded = read_counts(samples, window).cells
    assert _cells(r.asDict() for r in counts(frame, window).collect()) == folded
    frame.createOrReplaceTempView("judged")
    assert (
        _cells(r.asDict() for r in spark.sql(counts_sql("judged", window, "spark")).collect())
        == folded
    )


def test_a_frame_with_a_column_twice_is_refused_by_name(spark):
    """Issue 33, item 8: a second `passed` column is refused, naming it, not left to Spark's
    ambiguous-reference error or read one way."""
    from pyspark.sql import functions as F

    from judgekit.watch.spark import counts

    frame = spark.createDataFrame(
        [("2026-11-01 10:00:00", "rx", False, True)], ["timestamp", "criterion", "passed", "p2"]
    ).select(
        F.to_timestamp("timestamp").alias("timestamp"),
        "criterion",
        "passed",
        F.col("p2").alias("passed"),
    )
    with pytest.raises(ValueError, match="the frame has the column 'passed' twice"):
        counts(frame, "1d")
