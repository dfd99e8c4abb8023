"""The shells at the right end of the data flow: the `judgekit` command (a lazy group, a module per
group of commands), and what they render — the terminal, report.html, CI outputs, the label page,
the scaffold. `main` is the console entry point.
"""

from judgekit.cli.app import app


def main() -> None:
    app(prog_name="judgekit")
