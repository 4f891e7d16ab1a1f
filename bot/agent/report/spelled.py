"""Numbers written in words, turned into digits before anything reads them: `three hundred and
twelve`, `zwei Millionen`, `dos millones y medio`, `a quarter of`, footnote marks and digits
glued to words taken apart. text2num (MIT, offline, Rust) does the languages it knows (English,
German, French, Spanish, Italian, Portuguese); Russian and Japanese numbers are read as digits.
"""

from __future__ import annotations

import re

from text_to_num import alpha2digit

from bot.agent.report import units as u
from bot.agent.report.units import FRACTIONS, SCALES

SPELLED_LANGUAGES = ("en", "de", "fr", "es", "it", "pt")
_FOOTNOTE = re.compile(r"(?<=[^\s\d])\[\d{1,3}\]")
_GLUED_BEFORE = re.compile(r"\b([A-Z]?[a-z]{2,})(\d{4}|\d{1,3}(?:,\d{3})+)\b")
_GLUED_AFTER = re.compile(r"\b(\d{4})([A-Za-z][a-z]{2,})\b")
_SCALE_AFTER_DIGITS = re.compile(
    r"(?<=\d)(\s+)(" + "|".join(sorted(map(re.escape, SCALES), key=len, reverse=True)) + r")\b",
    re.IGNORECASE,
)
_FRACTIONS = "|".join(sorted(map(re.escape, FRACTIONS), key=len, reverse=True))
_FRACTION = re.compile(
    r"(?<!first )(?<!second )(?<!latter )(?<!the )(?<!1st )(?<!2nd )\b("
    + _FRACTIONS
    + r")\s+(?=of\s+(?!an?\b)|the\b|(?:had|have|has|were|was|are|is|by)\b)",
    re.IGNORECASE,
)
_BOUNDS = (*u.ABOVE, *u.AT_LEAST, *u.BELOW, *u.AT_MOST, *u.NEARLY, *u.ABOUT)
_TIME = ("after", "before", "since", "later than", "earlier than")
_BOUND_WORDS = "|".join(
    sorted((re.escape(w) for w in _BOUNDS if w[0].isalpha() and w not in _TIME), key=len)[::-1]
)
_BOUNDED_FRACTION = re.compile(rf"(?<!\w)((?:{_BOUND_WORDS})\s+)({_FRACTIONS})\b", re.IGNORECASE)
_HALF_SCALE = re.compile(r"\bhalf an?\s+(?=(?:million|billion|thousand|hundred|dozen)\b)", re.I)
_A_DOZEN = re.compile(r"\ba\s+(?=dozen\b)", re.IGNORECASE)
_SMALL = (
    "two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety"
)
_COUNTED = (
    "(?:year|month|week|day|hour|minute|decade|century|time|storey|story|game|match|episode|"
    "season|seat|member|man|person|part|mile|kilometre|kilometer|metre|meter|foot|inch|point|"
    "goal|run|star|track|song|volume|book|lane|yard)"
)
"""What a number joined by a hyphen counts when it is a number (`nine-year`, `three-time`):
not `two-way`, `third-party` or `second-hand`, which name a kind."""
_ORDINALS = "second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth"
_WORDS = "|".join(f"{_SMALL} {_ORDINALS} one first".split())
_AND_A_HALF = re.compile(rf"\b(\d+|{_WORDS})\s+and\s+a\s+half\b", re.IGNORECASE)
_HYPHENATED_ANY = re.compile(
    rf"\b({'|'.join(f'{_SMALL} {_ORDINALS}'.split())})()-(?=[a-z])(?!(?:{_WORDS})\b)", re.I
)
_HYPHENATED = re.compile(
    rf"\b(?:({'|'.join(_SMALL.split())})-(?={_COUNTED}s?\b)"
    rf"|({'|'.join(_ORDINALS.split())})-(?=[a-z]+est\b|most\b|least\b|place\b))",
    re.IGNORECASE,
)
_LONE_ONE = re.compile(
    rf"(?<![\w-])(?:one|first)\b(?!-|\s+(?:hundred|thousand|million|billion|in\s+(?:{_WORDS}|\d)))",
    re.IGNORECASE,
)
_VAGUE = re.compile(r"(?<!\d)(?<!\d\s)\b(tens|dozens|hundreds|thousands|millions|billions)\b", re.I)
_NAMED = re.compile(
    r"(?<=[A-Z][a-z]\s)(?:One|Two|Three|Four|Five|Six|Seven|Eight|Nine|Ten|Twelve|Hundred|Thousand)\b"
    r"|\b(?:One|Two|Three|Four|Five|Six|Seven|Eight|Nine|Ten|Twelve|Hundred|Thousand)(?=\s[A-Z][a-z])"
)
_HALVES = re.compile(r"(\d)\s*(?:-\s*)?(1/2|½|1/4|¼|3/4|¾)(?!\d)")
_HALF_VALUES = {"1/2": ".5", "½": ".5", "1/4": ".25", "¼": ".25", "3/4": ".75", "¾": ".75"}
_SLASHED = re.compile(r"(?<![\d/.,])(?:([1-9])/([1-9]\d?)|([½⅓⅔¼¾⅕⅙⅛⅒]))\s+(?=of\b)")
"""A share written as a fraction before `of` (`1/3 of`, `½ of`), as in words."""
_GLYPHS = {"½": 50.0, "⅓": 100 / 3, "⅔": 200 / 3, "¼": 25.0, "¾": 75.0, "⅕": 20.0}
_GLYPHS |= {"⅙": 100 / 6, "⅛": 12.5, "⅒": 10.0}
_FOLD = re.compile(rf"\b({'|'.join(_SMALL.split())}|hundred|thousand)-?fold\b", re.IGNORECASE)
_SPAN = "(year|month|week|day|hour|decade|century)"
_SHARE_OF_SPAN = re.compile(
    rf"\b({_FRACTIONS})\s+(?:of\s+)?an?\s+(century|decade|year)\b", re.IGNORECASE
)
"""`a quarter of a century`, `half a decade`: years."""
_SPAN_YEARS = {"century": 100, "decade": 10, "year": 1}
_SPAN_AND_A_HALF = re.compile(
    rf"\b(an?|one|\d+|{_SMALL.replace(' ', '|')})\s+{_SPAN}s?\s+and\s+a\s+half\b", re.I
)
"""`a year and a half`, `two hours and a half`: 1.5 years, 2.5 hours."""
_HIDDEN = re.compile(r"qqkept([a-j]+)qq")
_HALF = re.compile(r"\b(\d+)\s+(?:y|e|et|und)\s+(?:medio|media|mezzo|mezza|meio|meia|demi|demie)\b")


def prepare(
    text: str, language: str, *, every: bool = False, claim: bool = False, names: bool = True
) -> str:
    """`text` with its spelled numbers (in `language`) as digits, fractions as percentages,
    footnote marks removed and digits glued to words taken apart (`Spain1986`). `every`: also
    a lone small number or ordinal (`second`, `one`), which text2num leaves as words. `claim`:
    but for a lone `one` or `first`, as often a word as a number (`one of the`, `at first`).
    `names`: a number word beside a capitalised word is kept as a word (`the Hundred Years'
    War`); without, it is read (`Two American soldiers`)."""
    text = _FOOTNOTE.sub(" ", text)
    text = _GLUED_BEFORE.sub(r"\1 \2", text)
    text = _GLUED_AFTER.sub(r"\1 \2", text)
    if language == "en":
        text = _english(text, claim=claim)
    text = _HALVES.sub(lambda m: m.group(1) + _HALF_VALUES[m.group(2)], text)
    if language in SPELLED_LANGUAGES:
        # text2num would turn `1.5 million` into `1.5 1000000`: a scale after digits is ours.
        # `millions of hashtags` is no number, nor the `Hundred` of the Hundred Years' War.
        kept = _Kept()
        hidden = _LONE_ONE.sub(lambda m: kept.hide(m.group(0)), text) if claim else text
        hidden = _SCALE_AFTER_DIGITS.sub(lambda m: m.group(1) + kept.hide(m.group(2)), hidden)
        hidden = _VAGUE.sub(lambda m: kept.hide(m.group(1)), hidden)
        if language == "en" and names:
            hidden = _NAMED.sub(lambda m: kept.hide(m.group(0)), hidden)
        threshold = {"threshold": 0} if every else {}
        text = _HALF.sub(_plus_half, kept.restore(alpha2digit(hidden, language, **threshold)))
    return text


def _english(text: str, *, claim: bool) -> str:
    """Shares in words or as fractions as percentages, hedged unless a bound says how (`a
    third of` and `1/3 of` are about 33%, `more than a third` more than 33.33%); a share of a
    century or a decade as years (`a quarter of a century`), `a year and a half` as 1.5 years,
    `tenfold` as `10-fold`; `half a million` as 0.5 million, `two and a
    half` as 2.5, `a dozen` as 1 dozen; a number word joined to a word by a hyphen as digits
    (`nine-year`, `second-largest`), which text2num leaves as words: in a claim only when it
    counts something (not `two-way`, `third-party`); a source states them all."""
    text = _SHARE_OF_SPAN.sub(_years, text)
    text = _SPAN_AND_A_HALF.sub(_and_a_half, text)
    text = _SLASHED.sub(_slashed, text)
    text = _FOLD.sub(lambda m: f"{_digits(m.group(1))}-fold", text)
    text = _HALF_SCALE.sub("0.5 ", text)
    text = _A_DOZEN.sub("1 ", text)
    text = _AND_A_HALF.sub(lambda m: f"{_digits(m.group(1))}.5", text)
    text = _BOUNDED_FRACTION.sub(lambda m: f"{m.group(1)}{_share(m.group(2))}%", text)
    text = _FRACTION.sub(lambda m: f"~ {_share(m.group(1))}% ", text)
    joined = _HYPHENATED if claim else _HYPHENATED_ANY
    return joined.sub(lambda m: f"{_digits(m.group(1) or m.group(2))}-", text)


def _years(match: re.Match[str]) -> str:
    years = FRACTIONS[match.group(1).lower()] * _SPAN_YEARS[match.group(2).lower()] / 100
    return f"{years:g} years"


def _and_a_half(match: re.Match[str]) -> str:
    whole = match.group(1).lower()
    count = 1 if whole in ("a", "an") else int(_digits(whole))
    return f"{count}.5 {match.group(2)}s"


def _slashed(match: re.Match[str]) -> str:
    if match.group(3):
        return f"~ {_GLYPHS[match.group(3)]:.4g}% "
    top, bottom = int(match.group(1)), int(match.group(2))
    return f"~ {100 * top / bottom:.4g}% " if top < bottom else match.group(0)


def _share(fraction: str) -> str:
    return f"{FRACTIONS[fraction.lower()]:.4g}"


def _digits(word: str) -> str:
    return word if word.isdigit() else alpha2digit(word.lower(), "en", threshold=0)


class _Kept:
    """Words kept from text2num behind placeholders it does not know, put back after."""

    def __init__(self) -> None:
        self.words: list[str] = []

    def hide(self, word: str) -> str:
        self.words.append(word)
        return f"qqkept{_letters(len(self.words) - 1)}qq"

    def restore(self, text: str) -> str:
        return _HIDDEN.sub(lambda m: self.words[_index(m.group(1))], text)


def _letters(n: int) -> str:
    return "".join(chr(ord("a") + int(d)) for d in str(n))


def _index(letters: str) -> int:
    return int("".join(str(ord(ch) - ord("a")) for ch in letters))


def _plus_half(match: re.Match[str]) -> str:
    """`2000000 y medio` (from `dos millones y medio`) is 2,500,000."""
    whole = match.group(1)
    zeros = len(whole) - len(whole.rstrip("0"))
    unit = 10 ** (zeros - zeros % 3) if zeros >= 3 else 1
    return f"{int(whole) + unit / 2:g}" if unit == 1 else str(int(whole) + unit // 2)
