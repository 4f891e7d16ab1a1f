"""The watch commands' language: a cadence and `deep` only at the end, a company whose name
starts with `watch`, `pause` or a cadence word still reached, and ids as typed."""

from __future__ import annotations

import pytest

from bot.adapters.chat.commands import DISCORD_USAGE, USAGE, parse_command
from bot.domain import Depth, Mode
from bot.errors import RequestError
from bot.watches.cadence import Cadence


@pytest.mark.parametrize(
    ("text", "topic", "cadence", "depth", "mode"),
    [
        ("watch Acme Robotics", "Acme Robotics", Cadence.WEEKLY, Depth.QUICK, Mode.COMPANY),
        ("watch Acme Robotics weekly deep", "Acme Robotics", Cadence.WEEKLY, Depth.DEEP,
         Mode.COMPANY),
        ("watch Acme deep DAILY", "Acme", Cadence.DAILY, Depth.DEEP, Mode.COMPANY),
        ("watch deep Acme weekdays", "Acme", Cadence.WEEKDAYS, Depth.DEEP, Mode.COMPANY),
        ("watch contracts road maintenance, Ireland monthly", "road maintenance, Ireland",
         Cadence.MONTHLY, Depth.QUICK, Mode.CONTRACTS),
        # Only the last words count, once each.
        ("watch Weekly Inc", "Weekly Inc", Cadence.WEEKLY, Depth.QUICK, Mode.COMPANY),
        ("watch Daily Mail weekly", "Daily Mail", Cadence.WEEKLY, Depth.QUICK, Mode.COMPANY),
        ("watch Publishers Weekly weekly", "Publishers Weekly", Cadence.WEEKLY, Depth.QUICK,
         Mode.COMPANY),
        ("watch Deep Instinct deep", "Deep Instinct", Cadence.WEEKLY, Depth.DEEP, Mode.COMPANY),
        ("watch Pause Games", "Pause Games", Cadence.WEEKLY, Depth.QUICK, Mode.COMPANY),
        ("watch Acme Quarterly", "Acme Quarterly", Cadence.WEEKLY, Depth.QUICK, Mode.COMPANY),
    ],
)  # fmt: skip
def test_a_watch_takes_its_cadence_and_depth_from_the_end(
    text: str, topic: str, cadence: Cadence, depth: Depth, mode: Mode
) -> None:
    command = parse_command(text)

    assert command.kind == "watch"
    assert (command.topic, command.cadence, command.depth, command.mode) == (
        topic,
        cadence,
        depth,
        mode,
    )


@pytest.mark.parametrize(
    ("text", "kind", "watch_id"),
    [
        ("watches", "watches", ""),
        ("unwatch w3fa9c1", "unwatch", "w3fa9c1"),
        ("unwatch `W3FA9C1`", "unwatch", "w3fa9c1"),
        ("watch pause w3fa9c1", "pause", "w3fa9c1"),
        ("WATCH Resume w3fa9c1", "resume", "w3fa9c1"),
    ],
)
def test_listing_and_changing_watches(text: str, kind: str, watch_id: str) -> None:
    command = parse_command(text)

    assert (command.kind, command.watch_id) == (kind, watch_id)


def test_a_company_named_watch_is_still_researched() -> None:
    for text in ("Watch Tower", "company watch tower", "Watches Of Switzerland"):
        assert parse_command(text).kind == "research"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("watch", "Watch what?"),
        ("watch deep weekly", "Watch what?"),
        ("watch Acme fortnightly", "Unknown cadence 'fortnightly'"),
        ("watch " + "x" * 301, "That is 301 characters"),
        ("unwatch", "Which watch? `/research unwatch <id>`"),
        ("unwatch w1 w2", "Which watch?"),
        ("watch resume", "Which watch? `/research watch resume <id>`"),
    ],
)
def test_bad_watch_input_is_one_line(text: str, says: str) -> None:
    with pytest.raises(RequestError) as bad:
        parse_command(text)

    assert str(bad.value).startswith(says)
    assert "\n" not in str(bad.value)


def test_the_usage_tells_the_watch_commands() -> None:
    assert "`/research watch <company> [daily|weekdays|weekly|monthly] [deep]`" in USAGE
    assert "`/research unwatch <id>`" in USAGE
    assert "`/research watch-pause watch:<id>`" in DISCORD_USAGE
