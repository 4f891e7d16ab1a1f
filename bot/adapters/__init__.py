"""Front ends on top of the runs service: what chat platforms share (`chat/`), Slack
(`slack/`), Discord (`discord/`) and the terminal (`terminal`). A platform package never
imports another."""
