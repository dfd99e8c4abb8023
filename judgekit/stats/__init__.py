"""The statistics: pure functions over plain sequences (agreement, intervals, raters, corrected
rates, early stopping, the monitor's drop test). No I/O, no judgekit objects."""
