"""What a number is part of when it is no quantity: a code (`978-3-16-148410-0`, `+1 202 555
0143`), an identifier (`COVID-19`, `interleukin-2`), a label (`ISO 9001`, `iPhone 12`,
`phase 3`) or, in a claim, a name (`Boeing 737`, `Apollo 11`). `quantities` asks before it
reads a number."""

from __future__ import annotations

import re

from bot.agent.report import units as u
from bot.agent.report.wording import FUNCTION_WORDS, MARKERS, words

COMMON_WORDS = FUNCTION_WORDS | words(
    "after before since during over under between among until only just exactly another top up "
    "down all each every both nearly almost than then"
)
"""Capitalised at the start of a sentence, not a name (`Only 12 came`)."""

CODE = re.compile(
    r"(?<![\w.,+-])(?:\d+(?:[-‐‑]\d+){2,}|\+\d{1,3}(?:[\s.-]?\(?\d{1,4}\)?){2,})(?![\w-])"
)
"""Digits joined by hyphens three times or more (`978-3-16-148410-0`, `555-123-4567`), or a
telephone number (`+1 202 555 0143`): a code, no quantity (dates are read before)."""
HYPHENATED_NAME = re.compile(
    r"(?<![\w-])(?!(?:mid|pre|post|early|late)-)[^\W\d_]+(?:[-‑][^\W\d_]+)*[-‑]$", re.I
)
_PREVIOUS_WORD = re.compile(r"([^\W\d_][\w.'’-]*)\s+$")


def is_label(before: str) -> bool:
    """A number right after a code or a label word names a thing: `ISO 9001`, `iPhone 12`,
    `phase 3`. (A capitalised word alone is not enough: German capitalises every noun.)"""
    previous = _PREVIOUS_WORD.search(before)
    if previous is None or previous.end() != len(before):
        return False
    word = previous.group(1).rstrip(".")
    if word.lower() in u.LABELS or word.lower() + "." in u.LABELS:
        return True
    capitals = sum(ch.isupper() for ch in word)
    return (
        capitals >= 2 or (capitals == 1 and not word[0].isupper())
    ) and word.lower() not in u.MONTHS


def name_before(before: str) -> str:
    """The name a claim's bare number is part of: a capitalised word right before it that is
    no month and no common word (`Boeing 737`, `Apollo 11`, `World War 2`; not `In 12 days`)."""
    previous = _PREVIOUS_WORD.search(before)
    if previous is None or previous.end() != len(before) or not previous[1][0].isupper():
        return ""
    word = previous[1].rstrip(".")
    lower = word.lower()
    common = lower in u.MONTHS or lower in COMMON_WORDS or lower in MARKERS
    return "" if common or any(lower in words for words in u.QUALIFIERS) else word
