"""The statistics: pure functions over plain sequences (agreement, intervals, raters, corrected
rates, early stopping, the monitor's drop test, counted thresholds, paired comparisons of judges,
certified selective judging). No I/O, no judgekit objects."""
