"""The choice of company on Slack: the candidates as buttons on a run's message while it waits
for one (each in an actions block of its own, since Slack takes an action id once per block),
the settled company once it is known, and the presses, acknowledged first and answered through
the command service's rules for Summarize."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncAck
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.chat.choice import QUESTION, REFINE, choice_prompt, offers_choice
from bot.adapters.chat.service import CommandService, Refused
from bot.adapters.chat.sink import StatusView
from bot.adapters.slack.client import post_ephemeral
from bot.adapters.slack.render import SECTION_CHARS, clip, escape, safe_plain
from bot.adapters.slack.service import action_caller, reply_text
from bot.domain import Company

log = logging.getLogger(__name__)

ACTION_CHOOSE = "identity_choose"
"""A candidate's button; its value is `<run id>:<index>`."""
ACTION_REFINE = "identity_refine"
""""None of these: refine"; its value is the run id."""
BUTTON_CHARS = 75
"""Slack's limit for a button's text."""
CANDIDATE_CHARS = 500
"""A candidate's line and description in the question, escaped, then cut to this."""
NOTE_CHARS = 600


def identity_blocks(view: StatusView, run_id: str, *, buttons: bool) -> list[dict[str, Any]]:
    """The settled company, once it is; while the run waits for a choice (and the message has
    buttons), the question and one button per candidate, then "None of these: refine"."""
    blocks: list[dict[str, Any]] = []
    if view.identity:
        blocks.append(_section(clip(escape(view.identity), NOTE_CHARS)))
    if not (buttons and offers_choice(view)):
        return blocks
    lines = [f"*{QUESTION}*", escape(choice_prompt(view))]
    lines += [_candidate_line(n, company) for n, company in enumerate(view.candidates, start=1)]
    blocks.append(_section("\n".join(lines)))
    for index, company in enumerate(view.candidates):
        label = f"{index + 1}. {company.line()}"
        button = _button(label, ACTION_CHOOSE, f"{run_id}:{index}", primary=index == 0)
        blocks.append({"type": "actions", "block_id": f"identity_{index}", "elements": [button]})
    refine = _button(REFINE, ACTION_REFINE, run_id)
    blocks.append({"type": "actions", "block_id": "identity_refine", "elements": [refine]})
    return blocks


def button_text(text: str) -> str:
    """Untrusted text as a button's text: made inert whole, then cut to Slack's limit, so that
    no cut leaves a token half neutralised."""
    inert = safe_plain(text, limit=len(text) + 1)
    return inert if len(inert) <= BUTTON_CHARS else inert[: BUTTON_CHARS - 1] + "…"


def _candidate_line(n: int, company: Company) -> str:
    line = f"{n}. *{escape(company.line())}*"
    if company.description:
        line += f": {escape(company.description)}"
    return clip(line, CANDIDATE_CHARS)


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": clip(text, SECTION_CHARS)}}


def _button(label: str, action_id: str, value: str, *, primary: bool = False) -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "action_id": action_id,
        "value": value,
        "text": {"type": "plain_text", "text": button_text(label)},
    }
    if primary:
        button["style"] = "primary"
    return button


class SlackChoices:
    """The listeners of the candidates' buttons and of "None of these: refine"."""

    def __init__(self, client: AsyncWebClient, service: CommandService) -> None:
        self._client = client
        self._service = service

    async def on_choose(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        value = _value(body)
        run_id, _, index = value.rpartition(":")
        if not run_id or not index.isdigit():
            log.warning("slack: a company button without a choice: %r", value[:100])
            return
        await self._choose(body, run_id, int(index))

    async def on_refine(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        await self._choose(body, _value(body), None)

    async def _choose(self, body: dict[str, Any], run_id: str, choice: int | None) -> None:
        """The run's message and thread show what a choice did; only a refusal is said
        privately."""
        caller = action_caller(body)
        try:
            await self._service.choose(caller, run_id, choice)
        except Refused as refused:
            text = reply_text(refused.reply)
            await post_ephemeral(self._client, caller.channel, caller.user, text)


def _value(body: dict[str, Any]) -> str:
    actions = body.get("actions") or [{}]
    return str(actions[0].get("value", ""))
