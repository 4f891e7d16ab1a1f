"""The report, parsed, checked and rendered in one place: its model and Markdown rendering
(`model`, `footer`), the Markdown parser (`markdown`, `markup`), citations checked against what
the run retrieved (`citations`), claim support against the sources' text (the deterministic step
in `claims` over `facts`: `quantities`, `names`, `dates`, `phrases`, `spelled`, `units`,
`readings` and `wording`; the fast-model `judge`; the verdicts in `support`), and the finish
guard for a report offered early."""
