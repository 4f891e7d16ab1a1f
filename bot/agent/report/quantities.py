"""Numbers, amounts and shares as people write them, read into `Quantity` intervals.

Bounds (`more than`, `before`, `at least`, `under`, `by 1900`, `top 10`, `5,000+`),
approximations (`about`, `nearly`, with a tolerance that fits the number), ranges (`12–15`, `2018–19`, `between 10 and 20`), ordinals,
percentages and percentage points, scales (`k`, `bn`, `Mio.`, `lakh`, `Milliarden`, `万`),
units with their conversions (`18 in`, `460 mm`, `104 °F`), currencies, decimal commas, signs,
dates (see `dates`), phrases (see `phrases`: `several hundred`, `1 in 4`, `3-to-1`, `5 ft 10
in`) and ratios (`doubled`, `more than doubled`, `2-fold`). An identifier is not a quantity:
`COVID-19`, `SARS-CoV-2`, `interleukin-2`, `A320`, `ISO 9001`, `type 2`, `14th Dalai Lama`,
nor is a code (`978-3-16-148410-0`, `+1 202 555 0143`) or a version (`2.3.1`); a regnal number
(`Louis XIV`) is part of a name, and so is a claim's number after a name (`Boeing 737`, see
`Quantity.name`). A source's number grouped by spaces (`1 000 000`) is read both ways.
Text is `spelled.prepare`d first, so spelled-out numbers arrive as digits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.agent.report import units as u
from bot.agent.report.dates import read_dates
from bot.agent.report.names import CODE, HYPHENATED_NAME, is_label, name_before
from bot.agent.report.phrases import read_phrases
from bot.agent.report.readings import (
    ORDINAL,
    PERCENT,
    PLAIN,
    POINTS,
    RATIO,
    Quantity,
    Reading,
    digit_values,
    opened,
    written,
)
from bot.agent.report.units import Unit


def _alternation(words: object) -> str:
    return "|".join(sorted((re.escape(str(w)) for w in words), key=len, reverse=True))  # type: ignore[attr-defined]


_NUMBER = re.compile(r"(?<![\w.,])(\d(?:[\d,.'\u00a0\u2009\u202f]*\d)?)")
_SPACED = re.compile(r"(?<![\w.,])(\d{1,3}(?: \d{3})+)(?![\w.,]*\d)")
"""A number grouped by spaces (`1 000 000`), read in a source beside its digits read apart."""
_GLUED = re.compile(r"[^\W\d_]+")
_PERCENT = re.compile(rf"^\s?(?:{_alternation(u.PERCENT)}|процент\w*)(?!\w)", re.I)
_POINTS = re.compile(rf"^\s?(?:{_alternation(u.POINTS)})\b", re.I)
_SCALE = re.compile(rf"^[\s-]?({_alternation(u.SCALES)})(?:\b|(?<=[万億兆]))\.?", re.I)
_CURRENCY_AFTER = re.compile(
    rf"^\s?({_alternation(w for w in u.CURRENCIES if len(w) > 1 or not w.isalnum())})(?!\w)", re.I
)
_CURRENCY_BEFORE = re.compile(
    r"(?:^|(?<=[\s(]))(us\$|a\$|c\$|\$|€|£|¥|₹|usd|eur|gbp|jpy|inr|rs\.?|chf|cny|rmb)\s?$", re.I
)
_UNIT = re.compile(rf"^\s?({_alternation(u.UNITS)})(?![\w²])", re.I)
_INCH_CONTEXT = re.compile(
    r"^\s?in(?:\.|(?=\s*[(),;]|\s*$)|(?=\s+(?:diameter|long|wide|tall|high|thick|deep)\b))", re.I
)
_TITLE_AFTER = re.compile(r"^\s+[A-Z][a-z]")
_FOLD = re.compile(r"^[-\s]?fold\b", re.I)
_SIGN = re.compile(r"(?:^|(?<=[\s(]))[-−–]$")
_MINUS_WORD = re.compile(rf"\b(?:{_alternation(u.MINUS)})\s+$", re.I)
_RANGE_TO = re.compile(r"^\s*(?:-|–|—|to|bis|à|a|al)\s*(?=\d)")
_YEAR_RANGE = re.compile(r"(1\d|20)(\d\d)[-–/]$")
_BETWEEN_SECOND = re.compile(r"\bbetween\s+\S+(?:\s+\S+)?\s+and\s+$", re.I)
_BETWEEN = re.compile(r"\bbetween\s+$", re.I)
_AND = re.compile(r"^\s+and\s+(?=\d)")
_RANK = re.compile(r"\b(?:number|no\.)\s+$", re.I)
"""A label a source's number is still stated after (`peaked at number 7` for `the top 10`)."""
_RATIO = re.compile(rf"\b({_alternation(u.RATIOS)})\b", re.I)
_QUALIFIERS = [
    (kind, re.compile(rf"(?:^|(?<=\W))(?:{_alternation(said)})\s+$", re.I))
    for kind, said in zip(
        ("above", "at_least", "below", "at_most", "nearly", "about"), u.QUALIFIERS, strict=True
    )
]
_BOUND_AFTER = re.compile(
    r"^\s*(?:or|and|oder|und|ou|et|o|y)\s+(?:(more|above|over|greater|higher|longer|older|later|"
    r"upwards?|up|mehr|plus|más)|(less|fewer|below|under|lower|younger|earlier|weniger|moins|"
    r"menos))\b(?!\s+(?:than|to|als|que)\b)",
    re.I,
)
"""A bound said after the number: `250 or more` is at least 250, `18 or younger` at most 18."""
_TIME_WORDS = re.compile(
    r"(?i)(?:before|after|since|by|later than|earlier than|vor|avant|antes de|prima del)$"
)


@dataclass
class _Suffix:
    options: tuple[tuple[float, Unit], ...] = ((1.0, PLAIN),)
    """Each (scale, unit) the words after the number may mean: `45m` is 45e6 or 45 metres."""
    end: int = 0
    """Where the number's words end (in the text after the digits)."""
    plus: bool = False
    """Written with a `+` after it (`5,000+`): at least that."""

    @property
    def named(self) -> bool:
        return self.options != ((1.0, PLAIN),)

    def scale(self, scales: tuple[float, ...]) -> None:
        self.options = tuple(
            dict.fromkeys((s * old, unit) for old, unit in self.options for s in scales)
        )

    def unit(self, units: tuple[Unit, ...]) -> None:
        self.options = tuple(
            dict.fromkeys((scale, unit) for scale, _ in self.options for unit in units)
        )


def read(text: str, *, source: bool, english: bool = False) -> list[Quantity]:
    """Every quantity of `text`. A claim's exact numbers stand for what rounds to them; a
    source's for themselves (`12%` in a claim is 11.5-12.5%, in a source 12%). `english`: its
    digits are written the English way (`5,000` is five thousand, never five)."""
    found = read_dates(text, source=source)
    found += [
        _bound(text, q)
        for q in read_phrases(text, source=source)
        if not any(d.start < q.end and q.start < d.end for d in found)
    ]
    taken = [(q.start, q.end) for q in found] + [m.span() for m in CODE.finditer(text)]
    for match in _NUMBER.finditer(text):
        if any(start <= match.start() < end for start, end in taken):
            continue
        quantity = _quantity(text, match, source, english)
        if quantity is not None:
            found.append(quantity)
            taken.append((match.start(), quantity.end))
    if source:
        found += [q for m in _SPACED.finditer(text) if (q := _quantity(text, m, source, english))]
    for match in _RATIO.finditer(text):
        # `doubled` is said of anything near twice, `more than doubled` of more.
        qualifier, at = _qualifier(text[max(0, match.start() - 60) : match.start()], year=False)
        kind = "about" if qualifier == "exact" else qualifier
        ratio = written(u.RATIOS[match[1].lower()], 1, 1.0, RATIO, kind, source, grouped=False)
        first = max(0, match.start() - 60) + at if at is not None else match.start()
        found.append(Quantity(text[first : match.end()], (ratio,), first, match.end(), True))
    return found


def _bound(text: str, phrase: Quantity) -> Quantity:
    """A phrase with the bound said before it: `fewer than 1 in 10` is below 10%."""
    kind, at = _qualifier(text[max(0, phrase.start - 60) : phrase.start], year=False)
    if at is None or kind in ("exact", "about", "nearly"):
        return phrase
    first = max(0, phrase.start - 60) + at
    # A bounded share is a share: `more than 1 in 10` is no count of one.
    shares = [r for r in phrase.readings if r.unit is not PLAIN] or list(phrase.readings)
    readings = tuple(opened(r, kind) for r in shares)
    return Quantity(text[first : phrase.end], readings, first, phrase.end, True, phrase.rank)


def _quantity(text: str, match: re.Match[str], source: bool, english: bool) -> Quantity | None:
    digits, (start, end) = match.group(1), match.span(1)
    offset = max(0, start - 60)
    before, after = text[offset:start], text[end : end + 80]
    if HYPHENATED_NAME.search(before):
        return None  # COVID-19, SARS-CoV-2, interleukin-2 (but mid-2019 is a date)
    suffix = _suffix(digits, after, before)
    if suffix is None:
        return None
    first = start
    between = _BETWEEN.search(before)
    currency = _CURRENCY_BEFORE.search(before)
    if currency is not None:
        code = u.CURRENCIES[currency.group(1).lower().rstrip(".")]
        suffix.unit((Unit(f"currency:{code}"),))
        before = before[: currency.start()]
        first = offset + currency.start()
    elif (to := _RANGE_TO.match(after) or (between and _AND.match(after))) and (
        span := _range(text, match, to.end(), before, (source, english))
    ):
        if between is None:
            return span
        opens = offset + between.start()  # `between 10 and 20`: one interval, as `10 to 20`
        return Quantity(text[opens : span.end], span.readings, opens, span.end, hedged=True)
    rank = source and bool(_RANK.search(before))
    label = not suffix.named and currency is None and not _year_like(digits)
    if label and not rank and is_label(before):
        return None
    name = name_before(before) if label and english and not source else ""
    sign = 1.0
    if (minus := _SIGN.search(before) or _MINUS_WORD.search(before)) is not None:
        sign, before, first = -1.0, before[: minus.start()], offset + minus.start()
    qualifier, at = _qualifier(before, year=_year_like(digits))
    qualifier = "at_least" if suffix.plus and qualifier == "exact" else qualifier
    if qualifier == "exact" and (bound := _BOUND_AFTER.match(after[suffix.end :])):
        qualifier = "at_least" if bound.group(1) else "at_most"
        suffix.end += bound.end()
    first = offset + at if at is not None else first
    if (year := _YEAR_RANGE.search(before)) and len(digits) == 2 and int(digits) > int(year[2]):
        digits = year[1] + digits  # 2018–19
    readings = [
        written(
            sign * value, decimals, scale, unit, qualifier, source, grouped=not digits.isdigit()
        )
        for value, decimals in digit_values(digits, english)
        for scale, unit in suffix.options
    ]
    if not readings:
        return None  # no number: a version (`2.3.1`), an address
    hedged = qualifier != "exact" or sign < 0
    return Quantity(
        text[first : end + suffix.end].strip(),
        tuple(readings),
        first,
        end + suffix.end,
        hedged,
        rank,
        name,
    )


def _range(
    text: str, first: re.Match[str], gap: int, before: str, how: tuple[bool, bool]
) -> Quantity | None:
    """`3-5 million`, `10 to 20%`, `4 to 4.5 days`: one interval, in the second number's words.
    (`from 7.5% to 5.5%` is a change, two numbers; `2018–19` two years.)"""
    if _year_like(first.group(1)) or re.search(r"\bfrom\s+$", before, re.I):
        return None
    at = first.end(1) + gap
    second = _NUMBER.match(text, at)
    if second is None:
        return None
    words = _suffix(second.group(1), text[second.end(1) : second.end(1) + 80], "")
    if words is None:
        return None
    (source, english), end = how, second.end(1) + words.end
    low, high = digit_values(first.group(1), english), digit_values(second.group(1), english)
    if not low or not high:
        return None
    readings = []
    for scale, unit in words.options:
        a = written(low[0][0], low[0][1], scale, unit, "exact", source, grouped=False)
        b = written(high[0][0], high[0][1], scale, unit, "exact", source, grouped=False)
        readings.append(Reading(min(a.low, b.low), max(a.high, b.high), unit))
    return Quantity(text[first.start(1) : end].strip(), tuple(readings), first.start(1), end)


def _suffix(digits: str, after: str, before: str) -> _Suffix | None:
    """The words after a number: None when they make it an identifier (`5G`, `A320s`)."""
    out = _Suffix()
    glued = _GLUED.match(after)
    if glued is not None:
        if not _glued(out, glued.group(0), digits, before, after[glued.end() :]):
            return None
        out.end = glued.end()
    rest = after[out.end :]
    if re.match(r"\+(?![\d+])", rest):
        out.plus, out.end, rest = True, out.end + 1, rest[1:]
    if (fold := _FOLD.match(rest)) is not None:
        out.unit((RATIO,))
        out.end += fold.end()
        return out
    if glued is None:
        rest = _spaced_scale(out, rest, before)
    for pattern, unit in ((_PERCENT, PERCENT), (_POINTS, POINTS)):
        if (found := pattern.match(rest)) is not None:
            out.unit((unit,))
            out.end += found.end()
            return out
    if (currency := _CURRENCY_AFTER.match(rest)) is not None:
        out.unit((Unit(f"currency:{u.CURRENCIES[currency.group(1).lower()]}"),))
        out.end += currency.end()
    elif _INCH_CONTEXT.match(rest):
        out.unit((PLAIN, *u.UNITS["inch"]))
        out.end += 3
    elif (word := _UNIT.match(rest)) is not None and word.group(1).lower() != "in":
        out.unit(u.UNITS[word.group(1).lower()])
        out.end += word.end()
    return out


def _glued(out: _Suffix, word: str, digits: str, before: str, after: str) -> bool:
    """Letters against the digits: an ordinal, a unit or a scale (True), or an identifier."""
    lower = word.lower()
    if lower in ("st", "nd", "rd", "th", "er", "e", "ème", "º"):
        out.unit((ORDINAL,))
        return not _TITLE_AFTER.match(after)  # the 14th Dalai Lama, the 101st Airborne
    if lower == "s" and digits.endswith("0"):
        return False  # a decade: `dates` reads it
    if word in ("C", "F"):
        out.unit(u.UNITS[u.GLUED_UNITS[lower]])
    elif lower in ("km", "kg", "mm", "cm"):
        out.unit(u.UNITS[lower])
    elif word == "m":
        _million_or_metres(out, before)
    elif lower in u.SCALES:
        out.scale((1e9, 1e12) if word == "Billion" else u.SCALES[lower])
    else:
        return False
    return True


def _spaced_scale(out: _Suffix, rest: str, before: str) -> str:
    """A scale word after the number (`1.5 million`, `2 Mrd.`, `mil millones`): the text after it."""
    scale = _SCALE.match(rest)
    if scale is None:
        return rest
    word = scale.group(1)
    if word == "m":
        _million_or_metres(out, before)
    else:
        out.scale((1e9, 1e12) if word == "Billion" else u.SCALES[word.lower()])
    out.end += scale.end()
    rest = rest[scale.end() :]
    if (again := _SCALE.match(rest)) is not None and again.group(1).lower() in (
        "millones",
        "million",
    ):
        out.scale((1e6,))  # `mil millones`
        out.end += again.end()
        rest = rest[again.end() :]
    return rest


def _million_or_metres(out: _Suffix, before: str) -> None:
    """`m` after a number: millions after a currency (`€45m`), else millions or metres."""
    if _CURRENCY_BEFORE.search(before):
        out.scale((1e6,))
    else:
        out.options = ((1e6, PLAIN), (1.0, u.UNITS["metres"][0]))


def _year_like(digits: str) -> bool:
    return digits.isdigit() and len(digits) == 4 and 1000 <= int(digits) <= 2100


def _qualifier(before: str, *, year: bool) -> tuple[str, int | None]:
    """The bound or hedge right before a number, and where it starts in `before`. Time words
    (`before`, `after`, `since`) bound years only: `after six months` is six months."""
    if (second := _BETWEEN_SECOND.search(before)) is not None:
        return "at_most", second.start()
    if (first := _BETWEEN.search(before)) is not None:
        return "at_least", first.start()
    for kind, pattern in _QUALIFIERS:
        if (found := pattern.search(before)) is not None:
            if not year and _TIME_WORDS.match(found.group(0).strip()):
                continue
            return kind, found.start()
    return "exact", None
