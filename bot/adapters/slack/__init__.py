"""The Slack front end on slack-bolt: the app and its server (`app`), the handlers (`front`),
the Web API client and rate budget (`client`), the run's sink, streamed live plan and
rendering, the command service's Slack side, the agent view, mentions, follow-ups, exports and
the summarize reaction. It never imports the Discord package."""
