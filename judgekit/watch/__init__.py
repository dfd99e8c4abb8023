"""Watching a judge over time: the history of calibrations, drift between two runs, the daily
re-check of a frozen canary, and monitoring of production pass rates."""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgekit.lazy import exports

if TYPE_CHECKING:
    from judgekit.watch.findings import (
        findings_of as findings_of,
        findings_place as findings_place,
        read_findings as read_findings,
    )
else:
    # Loaded when first used: a gate that reads the findings does not pay for SQLite before then.
    __getattr__, __dir__ = exports(
        "judgekit.watch",
        {
            name: "judgekit.watch.findings"
            for name in ("findings_of", "findings_place", "read_findings")
        },
    )
