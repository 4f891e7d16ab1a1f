"""`python -m bot` is the `research-bot` command."""

from bot.cli import main

main()
