"""The agent's tools and their sources: the typed tool registry (`registry`), web search and
its providers (`search`, `brave`), reading a page (`fetch`, its address guard `netguard`, the
extraction pool, PDFs), arXiv, GitHub, the client for trusted APIs (`api`), the process-wide
reading budget, and how results are listed for the model. Everything here treats what it
reads as untrusted data."""
