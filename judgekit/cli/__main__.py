"""`python -m judgekit.cli`: the `judgekit` command."""

from judgekit.cli import main

main()
