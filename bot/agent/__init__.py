"""The research agent, which knows nothing of Slack, Discord, the runs service or the store.

This package holds the quick loop (`loop.Researcher`) and what every engine shares: events,
control, state, the model and tool steps, prompts, the write-up, compression, the trajectory,
the asker's language, the frame words of a report in each language, and the fence for
untrusted text. Its wings:

- `deep/`: deep research (seed 004): planner, researchers, supervisor, final writer, page cache;
- `followup/`: a question about a finished run, answered from its evidence;
- `web/`: the tool registry and every source: search, page fetch and its address guard,
  extraction, PDF, arXiv, GitHub, the trusted-API client, the reading budget;
- `models/`: the model port, Anthropic and OpenAI-compatible ports, the provider chain;
- `report/`: the report model, Markdown, citations, claim support, the finish guard.

It imports only config, domain and errors from outside itself (and memory, in its worker
processes).
"""
