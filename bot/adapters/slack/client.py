"""Talking to Slack's Web API: the client (429s honoured), this process's share of Slack's rate
limits, its errors as ours, and the posting and upload calls every Slack module shares."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import aiohttp
from aiolimiter import AsyncLimiter
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.adapters.chat.sink import ChatError, split_text
from bot.adapters.slack.render import (
    escape,
    markdown_blocks,
    message_text,
)
from bot.config import Settings
from bot.errors import ConfigError
from bot.export import Exported

log = logging.getLogger(__name__)

SLACK_API_URL = "https://slack.com/api/"
RATE_LIMIT_RETRIES = 3
UPDATES_PER_MINUTE = 40
"""`chat.update` is Tier 3 (about 50 a minute per workspace): a margin for other edits."""
UPDATE_BURST = 10
"""Edits allowed back to back; with the rate above no minute ever sees more than 50."""
POSTS_PER_SECOND = 1
"""`chat.postMessage` allows about one a second per channel, with short bursts."""
POST_BURST = 3
STREAM_ENDS_PER_MINUTE = 12
"""`chat.startStream` and `chat.stopStream` are each Tier 2 (about 20 a minute per workspace)."""
STREAM_END_BURST = 8
APPENDS_PER_MINUTE = 80
"""`chat.appendStream` is Tier 4 (100 or more a minute per workspace): a margin below it."""
APPEND_BURST = 10

REPORT_PIECE_CHARS = 3_000
"""A report posted as messages is cut into pieces this long before escaping. Escaping can at
most quintuple a piece (`&` → `&amp;`), which stays under Slack's 40,000-character cut."""
AUTH_ERRORS = frozenset(
    {"invalid_auth", "not_authed", "token_revoked", "token_expired", "account_inactive"}
)
"""Slack's error codes for a token it no longer accepts."""
UNAVAILABLE = frozenset(
    {
        "not_allowed",
        "not_allowed_token_type",
        "method_deprecated",
        "unknown_method",
        "invalid_arguments",
        "missing_scope",
        "feature_not_enabled",
        "HTTP 404",
    }
)
"""Slack's answers that say this app or workspace cannot use a method at all (streams, agent
sessions): asking again would get the same."""


@contextmanager
def slack_errors() -> Iterator[None]:
    """Slack's refusals and connection failures, as `ChatError` with Slack's error code."""
    try:
        yield
    except SlackApiError as error:
        raise ChatError(_reason(error), auth=_code(error) in AUTH_ERRORS) from error
    except (SlackClientError, aiohttp.ClientError, TimeoutError) as error:
        raise ChatError(str(error).split("\n", 1)[0] or type(error).__name__) from error


def _code(error: SlackApiError) -> str:
    # Not always a parsed response: an HTML error page leaves the raw HTTP response here.
    response = error.response
    if isinstance(response, AsyncSlackResponse):
        return str(response.get("error") or f"HTTP {response.status_code}")
    return f"HTTP {getattr(response, 'status', '?')}"


def _reason(error: SlackApiError) -> str:
    code = _code(error)
    needed = (
        error.response.get("needed") if isinstance(error.response, AsyncSlackResponse) else None
    )
    return f"{code}: the app needs the {needed} scope" if needed else code


def require_slack_settings(settings: Settings) -> None:
    """Raise ConfigError, in one sentence a person can act on, when a token is missing."""
    if settings.slack_bot_token is None:
        raise ConfigError(
            "SLACK_BOT_TOKEN is not set: copy the Bot User OAuth Token (xoxb-...) "
            "from your Slack app's OAuth & Permissions page."
        )
    if settings.slack_app_token is not None:
        if not settings.slack_app_token.get_secret_value().startswith("xapp-"):
            raise ConfigError(
                "SLACK_APP_TOKEN must be an app-level token (xapp-...) with the "
                "connections:write scope, from Basic Information > App-Level Tokens."
            )
    elif settings.slack_signing_secret is None:
        raise ConfigError(
            "SLACK_SIGNING_SECRET is not set: HTTP mode needs it to check that "
            "requests come from Slack (set SLACK_APP_TOKEN for Socket Mode instead)."
        )


def make_client(settings: Settings, session: aiohttp.ClientSession | None = None) -> AsyncWebClient:
    """The Web API client, honouring 429 Retry-After; `session`: see `app.web_api_session`."""
    require_slack_settings(settings)
    assert settings.slack_bot_token is not None
    base_url = settings.slack_api_url or SLACK_API_URL
    return AsyncWebClient(
        token=settings.slack_bot_token.get_secret_value(),
        base_url=base_url if base_url.endswith("/") else base_url + "/",
        session=session,
        retry_handlers=[
            AsyncConnectionErrorRetryHandler(),
            AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
        ],
    )


Share = Callable[[], float]
"""This process's share of Slack's rate limits: 1.0 alone, 1/N with N live replicas."""


def whole() -> float:
    return 1.0


def one_in(replicas_alive: Callable[[], int]) -> Share:
    """The share of one replica among those alive now (itself included)."""
    return lambda: 1.0 / max(1, replicas_alive())


class SharedLimiter(AsyncLimiter):
    """A leaky bucket of Slack's whole rate, of which this process may use `share()`: each
    acquisition costs 1/share of the bucket, so with N replicas each sends at 1/N of the rate
    (in bursts of 1/N of the burst, at least one). The share is read at every acquisition, so
    the budget re-divides as soon as the number of replicas changes."""

    __slots__ = ("_burst", "_share")

    def __init__(self, max_rate: float, time_period: float, share: Share) -> None:
        super().__init__(max_rate, time_period)
        self._burst = max_rate
        self._share = share

    def cost(self) -> float:
        """What one acquisition takes from the bucket now."""
        share = self._share()
        cost = 1.0 / share if 0.0 < share <= 1.0 else 1.0
        # The bucket must hold one acquisition. With more replicas than the burst it grows to
        # one acquisition's cost but drains no faster, so the rate still divides by N.
        self.max_rate = max(self._burst, cost)
        return cost

    def has_capacity(self, amount: float | None = None) -> bool:
        """Room for one acquisition (`amount` None); a number is in the bucket's own units, as
        aiolimiter's `acquire` asks."""
        return super().has_capacity(self.cost() if amount is None else amount)

    async def acquire(self, amount: float | None = None) -> None:
        await super().acquire(self.cost() if amount is None else amount)


class SlackBudget:
    """Slack's rate limits as leaky buckets shared by every run of the process, and divided
    between the replicas (`share`), so that N replicas never send N times the allowed rate."""

    def __init__(
        self,
        *,
        updates_per_minute: float = UPDATES_PER_MINUTE,
        update_burst: int = UPDATE_BURST,
        posts_per_second: float = POSTS_PER_SECOND,
        post_burst: int = POST_BURST,
        share: Share = whole,
    ) -> None:
        self._update_bucket = (update_burst, update_burst * 60 / updates_per_minute)
        self._post_bucket = (post_burst, post_burst / posts_per_second)
        self._share = share
        self._updates: dict[str, SharedLimiter] = {}
        self._posts: dict[str, SharedLimiter] = {}
        self._stream_ends: dict[str, SharedLimiter] = {}
        self._appends: dict[str, SharedLimiter] = {}
        self.unstreamable: set[str] = set()
        """Workspaces that refused `chat.startStream` as unavailable to this app: runs there
        use the edited status message without asking again (until the process restarts)."""
        self.sessionless: set[str] = set()
        """Workspaces that refused agent sessions (`agents.sessions.setStatus`) likewise."""
        self._warned: set[str] = set()

    def warn_once(self, what: str) -> bool:
        """True the first time `what` is asked about: a warning about the app's setup is said
        once per process, not once per run."""
        if what in self._warned:
            return False
        self._warned.add(what)
        return True

    def updates(self, team: str) -> SharedLimiter:
        """The `chat.update` budget of one workspace."""
        if team not in self._updates:
            # A bucket of `update_burst` that drains at the rate: the burst plus one minute's
            # drain is the most any sliding minute can see.
            self._updates[team] = SharedLimiter(*self._update_bucket, self._share)
        return self._updates[team]

    def posts(self, channel: str) -> SharedLimiter:
        """The `chat.postMessage` budget of one channel."""
        if channel not in self._posts:
            self._posts[channel] = SharedLimiter(*self._post_bucket, self._share)
        return self._posts[channel]

    def stream_ends(self, method: str, team: str) -> SharedLimiter:
        """The budget of `chat.startStream` or `chat.stopStream` (each its own) in a workspace."""
        key = f"{method} {team}"
        if key not in self._stream_ends:
            self._stream_ends[key] = SharedLimiter(
                STREAM_END_BURST, STREAM_END_BURST * 60 / STREAM_ENDS_PER_MINUTE, self._share
            )
        return self._stream_ends[key]

    def appends(self, team: str) -> SharedLimiter:
        """The `chat.appendStream` budget of one workspace."""
        if team not in self._appends:
            self._appends[team] = SharedLimiter(
                APPEND_BURST, APPEND_BURST * 60 / APPENDS_PER_MINUTE, self._share
            )
        return self._appends[team]


async def post_message(
    client: AsyncWebClient,
    budget: SlackBudget,
    channel: str,
    *,
    text: str,
    blocks: list[dict[str, Any]] | None = None,
    thread_ts: str | None = None,
) -> str:
    """Post (text already safe) with unfurls off; join a public channel once if not in it yet.

    Joining rather than posting from outside (`chat:write.public`) keeps the bot a member, so
    that it receives the channel's reactions and may upload files into its threads.
    """
    args: dict[str, Any] = {
        "channel": channel,
        "text": text,
        "unfurl_links": False,
        "unfurl_media": False,
    }
    if blocks is not None:
        args["blocks"] = blocks
    if thread_ts:
        args["thread_ts"] = thread_ts
    try:
        async with budget.posts(channel):
            response = await client.chat_postMessage(**args)
    except SlackApiError as error:
        if _code(error) != "not_in_channel":
            raise
        await client.conversations_join(channel=channel)
        async with budget.posts(channel):
            response = await client.chat_postMessage(**args)
    return str(response["ts"])


async def upload_file(
    client: AsyncWebClient,
    channel: str,
    thread_ts: str,
    filename: str,
    markdown: str,
    comment: str = "",
) -> None:
    """The report as a file in a thread (three calls: URL, bytes, complete); `comment` untrusted."""
    await client.files_upload_v2(
        channel=channel,
        thread_ts=thread_ts,
        filename=filename,
        title=filename,
        content=markdown,
        initial_comment=message_text(comment) if comment else None,
    )


async def share_file(
    client: AsyncWebClient, channel: str, file: Exported, note: str, *, thread_ts: str = ""
) -> None:
    """A file in a channel, or in a thread of it, with `note` (safe mrkdwn: ours, escaped); joins
    a public channel once if not in it yet, as `post_message` does."""
    args: dict[str, Any] = {
        "channel": channel,
        "filename": file.filename,
        "title": file.filename,
        "file": file.data,
        "initial_comment": note,
    }
    if thread_ts:
        args["thread_ts"] = thread_ts
    try:
        await client.files_upload_v2(**args)
    except SlackApiError as error:
        if _code(error) != "not_in_channel":
            raise
        await client.conversations_join(channel=channel)
        await client.files_upload_v2(**args)


async def post_ephemeral(client: AsyncWebClient, channel: str, user: str, text: str) -> None:
    """A message only `user` sees (text already safe); a refusal is logged, not raised: it is
    the answer to a click, and nobody else would hear of it."""
    try:
        with slack_errors():
            await client.chat_postEphemeral(channel=channel, user=user, text=text)
    except ChatError as error:
        log.warning("slack: ephemeral to %s failed: %s", user, error)


async def post_text(
    client: AsyncWebClient, budget: SlackBudget, channel: str, thread_ts: str, markdown: str
) -> None:
    """Untrusted Markdown of any length as thread messages, in order: each a `markdown` block
    (formatting shown, mentions defused), with its escaped text for notifications."""
    for piece in split_text(markdown, REPORT_PIECE_CHARS):
        await post_message(
            client,
            budget,
            channel,
            text=escape(piece),
            blocks=markdown_blocks(piece),
            thread_ts=thread_ts,
        )
