"""The report, parsed, checked and rendered in one place: its model and Markdown rendering
(`model`), the Markdown parser (`markdown`, `markup`), citations checked against what the run
retrieved (`citations`), claim support against the sources' text (`facts`, `claims`,
`support`), and the finish guard for a report offered early."""
