"""Front ends: Slack, Discord and the terminal, all on top of the runs service."""
