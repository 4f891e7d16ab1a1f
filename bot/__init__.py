"""research-bot: autonomous company research in Slack, Discord and the terminal."""

__version__ = "0.1.0"
