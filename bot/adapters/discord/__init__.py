"""The Discord front end on discord.py: the client and handlers (`app`), the run's card
(Components V2) and sink, persistent views, user installs (`interaction`), the command
service's Discord side, set-up, the gateway (held by one replica at a time: `gateway`),
follow-ups and exports.

Every import of the library is absolute (`import discord`), so this package, named
`bot.adapters.discord`, never shadows it. It never imports the Slack package."""
