"""The calibration report: the model written as report.json (and read back), report.md and the
terminal table. `verdicts.jsonl` beside report.json holds the evidence (judgekit.judging.recorded).
Names load on first use: the formatting rules (render) do not pull in the models.
"""

from judgekit.lazy import exports

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
    "ReportPart",
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
__all__ = sorted(_MODEL + _RENDER)
__getattr__, __dir__ = exports(
    __name__,
    {
        **{n: "judgekit.report.model" for n in _MODEL},
        **{n: "judgekit.report.render" for n in _RENDER},
    },
)
