"""The `/research` language both chat platforms share: which words choose the run, and how a
company whose name starts with one of them is still reached."""

from __future__ import annotations

import pytest

from bot.adapters.chat.commands import parse_command, topic_command
from bot.domain import Depth, Mode


@pytest.mark.parametrize(
    ("text", "topic", "mode", "depth"),
    [
        ("Deep Instinct", "Deep Instinct", Mode.COMPANY, Depth.QUICK),
        ("DEEP Instinct", "DEEP Instinct", Mode.COMPANY, Depth.QUICK),
        ("Contracts Finder", "Contracts Finder", Mode.COMPANY, Depth.QUICK),
        ("Company Watch", "Company Watch", Mode.COMPANY, Depth.QUICK),
        ("company deep instinct", "deep instinct", Mode.COMPANY, Depth.QUICK),
        ("company Contracts Finder Ltd", "Contracts Finder Ltd", Mode.COMPANY, Depth.QUICK),
        ("deep Deep Instinct", "Deep Instinct", Mode.COMPANY, Depth.DEEP),
        ("deep company deep instinct", "deep instinct", Mode.COMPANY, Depth.DEEP),
        # The mode words keep their meaning in lower case, and before anything longer.
        ("deep Acme Robotics", "Acme Robotics", Mode.COMPANY, Depth.DEEP),
        ("deep instinct", "instinct", Mode.COMPANY, Depth.DEEP),
        ("Deep contracts road maintenance, Ireland", "road maintenance, Ireland", Mode.CONTRACTS,
         Depth.DEEP),
        ("Contracts road maintenance in Ireland", "road maintenance in Ireland", Mode.CONTRACTS,
         Depth.QUICK),
        ("deep contracts Acme", "Acme", Mode.CONTRACTS, Depth.DEEP),
    ],
)  # fmt: skip
def test_a_mode_word_or_a_company_name(text: str, topic: str, mode: Mode, depth: Depth) -> None:
    for command in (parse_command(text), topic_command(text)):
        assert (command.topic, command.mode, command.depth) == (topic, mode, depth)
