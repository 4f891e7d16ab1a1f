"""The research agent: knows nothing of Slack or Discord."""
