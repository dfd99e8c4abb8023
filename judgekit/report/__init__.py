"""The calibration report: the model written as report.json (and read back), report.md and the
terminal table. `verdicts.jsonl` beside report.json holds the evidence (judgekit.judging.recorded).
Names load on first use: the formatting rules (render) do not pull in the models.
"""

from typing import TYPE_CHECKING

from judgekit.lazy import exports

if TYPE_CHECKING:  # what a type checker sees: the real names, so each keeps its signature
    from judgekit.report.model import (
        Annotators as Annotators,
        ClaimStages as ClaimStages,
        ConfusionCounts as ConfusionCounts,
        Consistency as Consistency,
        CriterionReport as CriterionReport,
        Disagreement as Disagreement,
        EarlyStop as EarlyStop,
        JudgeInfo as JudgeInfo,
        Report as Report,
        Slice as Slice,
        UsageSummary as UsageSummary,
    )
    from judgekit.report.parts import ReportPart as ReportPart
    from judgekit.report.render import (
        INTERVAL_NAMES as INTERVAL_NAMES,
        METRIC_NAMES as METRIC_NAMES,
        finite as finite,
        fmt_number as fmt_number,
        md_escape as md_escape,
        printable as printable,
        to_markdown as to_markdown,
        to_table as to_table,
    )

_MODEL = (
    "Annotators",
    "ClaimStages",
    "ConfusionCounts",
    "Consistency",
    "CriterionReport",
    "Disagreement",
    "EarlyStop",
    "JudgeInfo",
    "Report",
    "Slice",
    "UsageSummary",
)
_RENDER = (
    "INTERVAL_NAMES",
    "METRIC_NAMES",
    "finite",
    "fmt_number",
    "md_escape",
    "printable",
    "to_markdown",
    "to_table",
)
__all__ = sorted((*_MODEL, "ReportPart", *_RENDER))
if not TYPE_CHECKING:  # at run time each name loads on first use
    __getattr__, __dir__ = exports(
        __name__,
        {
            **{n: "judgekit.report.model" for n in _MODEL},
            "ReportPart": "judgekit.report.parts",
            **{n: "judgekit.report.render" for n in _RENDER},
        },
    )
