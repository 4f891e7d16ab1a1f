"""`python -m bot` is the `research-bot` command."""

from bot.cli.app import main

main()
