"""What every chat platform shares: the sink protocol a platform implements (`sink`), the
progress renderer (`progress`), the `/research` language (`commands`) and the platform-neutral
command service (`service`), the rule for links, exports, and follow-up replies. Nothing here
imports Slack or Discord."""
