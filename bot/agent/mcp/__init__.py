"""MCP servers as sources: the operator's config (`config`), one connection per server kept for
the whole process (`servers`), and what a run's model sees of them (`tools`, `results`).

Only `config` and `names` are light: the SDK loads with `servers`, in the commands that use it."""
