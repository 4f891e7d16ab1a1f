"""The `research-bot` command (`app`), a module per family of subcommands: `research` and
`resume` (the run itself: `terminal_run`), `ask`, the history readers (`history`: history,
usage, show, export, eval), and `serve` with `discord sync`; `common` holds what they share."""
