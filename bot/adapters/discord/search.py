"""`/research search` on Discord: the command service's hits, answered to the person alone
(an ephemeral followup), each with the jump link of its run's message, from which its thread
opens (they share an id); a run with no thread in a server (a user install's) names
`/research show <run id>`. Topics and snippets are made inert, masked links included."""

from __future__ import annotations

from typing import Any

import discord

from bot.adapters.chat.commands import search_command
from bot.adapters.chat.found import ThreadLink
from bot.adapters.chat.service import CommandService, Reply
from bot.adapters.discord.service import DISCORD, caller_of
from bot.adapters.discord.sink import tell
from bot.adapters.discord.views import safe_text
from bot.errors import RequestError
from bot.store.search import ReportHit

SEARCH_USAGE = (
    "Search for what? `/research search words:<words>`, e.g. `words:acme pricing`: this "
    "server's past reports and answers, only you see them."
)
JUMP = "https://discord.com/channels/"
SHOW_RUN = "`/research show run:{run_id}`"


def found_text(text: str) -> str:
    """Stored text for a search answer: inert (`safe_text`), and no `[label](url)` that would
    show a stored link under a label."""
    return safe_text(text).replace("[", "\\[")


FOUND = DISCORD._replace(escape=found_text)


async def answer_search(
    service: CommandService, interaction: discord.Interaction[Any], words: str
) -> None:
    await interaction.response.defer(ephemeral=True, thinking=True)
    try:
        wanted = search_command(words, SEARCH_USAGE)
    except RequestError as error:
        await tell(interaction, Reply.of(error).render(FOUND))
        return
    caller = caller_of(interaction)
    found = await service.search(
        caller, wanted.words, link=thread_link(caller.workspace), show=SHOW_RUN
    )
    await tell(interaction, found.render(FOUND))


def thread_link(guild: str) -> ThreadLink:
    """Links into `guild`: a run's message (`/<guild>/<channel>/<message>`, its thread shares
    its id), or the thread itself for a follow-up, whose channel is the thread; none outside a
    server (a user install's runs live under `user:<id>`)."""

    async def link(hit: ReportHit) -> str | None:
        ids = [guild, hit.channel] + ([hit.thread] if hit.thread != hit.channel else [])
        if not all(part.isdigit() for part in ids):
            return None
        return JUMP + "/".join(ids)

    return link
