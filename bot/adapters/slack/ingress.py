"""Whatever reaches the Slack app that none of its handlers takes. Every request Slack sends gets
a 2xx: a failed event delivery is retried, and an app whose deliveries keep failing can have its
event subscriptions turned off, which would silence mentions, reactions and the agent view too.

- Interactivity this app never offers (shortcuts, modals, dialogs, legacy attachments, the
  retired workflow steps) is acknowledged before any listener reads it: bolt builds every
  listener's arguments from the payload, and a step payload without its step fails there.
- `app_rate_limited` (Slack dropped this app's events for a minute) is a warning saying so.
- An event, command or button no listener takes is acknowledged and logged at debug level; an
  event whose listener failed is still acknowledged (its error is logged with its traceback).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from slack_bolt.error import BoltUnhandledRequestError
from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

log = logging.getLogger(__name__)

OFFERED = frozenset({"block_actions"})
"""The interactive payloads this app's messages can cause: its buttons and its format menu."""
EVENTS_API = frozenset({"event_callback", "url_verification", "app_rate_limited"})
RETIRED_EVENTS = frozenset({"workflow_step_execute"})


class Unoffered(AsyncMiddleware):
    """Answers at once what no listener of this app is for (see the module's docstring)."""

    async def async_process(
        self,
        *,
        req: AsyncBoltRequest,
        resp: BoltResponse,
        next: Callable[[], Awaitable[BoltResponse]],
    ) -> BoltResponse | None:
        body = req.body
        kind = body.get("type")
        if kind == "app_rate_limited":
            log.warning("%s", rate_limited(body))
            return BoltResponse(status=200, body="")
        event = body.get("event") if kind == "event_callback" else None
        retired = isinstance(event, dict) and event.get("type") in RETIRED_EVENTS
        if retired or (isinstance(kind, str) and kind not in OFFERED | EVENTS_API):
            log.debug("slack: acknowledged %s: nothing of this app sends it", describe(body))
            return BoltResponse(status=200, body="")
        return await next()


async def on_error(
    error: Exception, body: dict[str, Any], response: BoltResponse | None
) -> BoltResponse | None:
    """The app's error handler (the app is built with `raise_error_for_unhandled_request`)."""
    if isinstance(error, BoltUnhandledRequestError):
        log.debug("slack: acknowledged %s: no handler takes it", describe(body))
        return BoltResponse(status=200, body="")
    log.error("slack: handling %s failed", describe(body), exc_info=error)
    if body.get("type") in EVENTS_API and response is not None:
        return BoltResponse(status=200, body="")  # a retry would fail the same way
    return None


def rate_limited(body: dict[str, Any]) -> str:
    """What Slack's `app_rate_limited` notice means, for the log."""
    minute = body.get("minute_rate_limited")
    when = (
        datetime.fromtimestamp(minute, UTC).strftime("%Y-%m-%d %H:%M UTC")
        if isinstance(minute, int)
        else "an unnamed minute"
    )
    return (
        f"slack: Slack dropped this app's events for workspace {body.get('team_id', '?')} in "
        f"the minute from {when} (app_rate_limited: more than 30,000 events an hour): "
        "mentions, summarize reactions, stop presses and agent-view messages of that minute "
        "never arrived; people who asked then must ask again"
    )


def describe(body: dict[str, Any]) -> str:
    """A request in a few words, for the log (no user text)."""
    kind = body.get("type")
    if kind == "event_callback":
        found = body.get("event")
        event: dict[str, Any] = found if isinstance(found, dict) else {}
        subtype = f"/{event['subtype']}" if event.get("subtype") else ""
        return f"a {event.get('type', 'nameless')}{subtype} event"
    if kind is None and body.get("command"):
        return f"the command {str(body['command'])[:40]}"
    return f"a {str(kind)[:40]} request"
