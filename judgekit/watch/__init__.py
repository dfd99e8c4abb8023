"""Watching a judge over time: the history of calibrations, drift between two runs, the daily
re-check of a frozen canary, and monitoring of production pass rates."""
