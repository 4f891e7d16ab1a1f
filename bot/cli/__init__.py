"""The `research-bot` command (`app`), a module per family of subcommands: `research` and
`resume` (the run itself: `terminal_run`), `ask` (the follow-up itself: `followup`), the
readers of the history (`history`: history and usage; `reports`: show, export and eval, with
`evaluation`), and `serve` with `discord sync`; `common` holds what they share."""
