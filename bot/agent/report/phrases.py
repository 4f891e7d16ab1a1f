"""Quantities written as phrases rather than as one number with its words: vague amounts
(`several hundred`, `a few thousand`), shares written as odds (`1 in 4`), ratios (`3-to-1`),
heights in feet and inches (`5 ft 10 in`), scientific notation (`3 × 10^6`, `1e6`) and, in
sources, Roman numerals after a name. Read before single numbers, on text that
`spelled.prepare` has turned to digits (`several 100`). `hundreds of`, `dozens` and `tens of
thousands` are manners of speaking more than sizes: not read, so a source that never gives the
size does not make them unsupported."""

from __future__ import annotations

import re

from bot.agent.report.readings import PERCENT, PLAIN, RATIO, Quantity, Reading, point, written
from bot.agent.report.units import UNITS

_POWER = r"(1(?:0{2,3}|0{6}|0{9}))(?![\d.,])"
_SEVERAL = re.compile(rf"\b(?:several|a few|a couple of|many)\s+{_POWER}", re.IGNORECASE)
_ODDS = re.compile(
    r"(?<![\w.,])(\d+)\s+in\s+(\d{1,3}(?:,\d{3})+|\d+)(?:\s+(thousand|million|billion)\b)?"
    r"(?![\w,]|\.\d|\s*%)",
    re.IGNORECASE,
)
_THOUSANDS = {"thousand": 1e3, "million": 1e6, "billion": 1e9}
_RATIO = re.compile(r"(?<![\w.,])(\d+(?:\.\d+)?)-to-(\d+(?:\.\d+)?)(?![\w,]|\.\d)")
_FEET_INCHES = re.compile(
    r"(?<![\w.,])(\d)\s*(?:ft|feet|foot|′|')\s*(\d{1,2}(?:\.\d+)?)(?![\d'])\s*(?:in\b\.?|inches|″|\")?",
    re.IGNORECASE,
)
_INCH = UNITS["inch"][0]
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
_POWER_OF_TEN = re.compile(
    r"(?<![\w.,])(?:(\d+(?:\.\d+)?)\s*[×x✕·*]\s*)?10"
    r"(?:\s*(?:\^|\*\*)\s*([-−]?\d{1,2})|([⁻]?[⁰¹²³⁴⁵⁶⁷⁸⁹]{1,2}))(?![\w.,]*\d)"
    r"|(?<![\w.,])(\d+(?:\.\d+)?)[eE]([-+]?\d{1,2})(?![\w.,])"
)
"""Scientific notation: `3 × 10^6`, `10⁶`, `2.5e-3`."""
_ROMAN = re.compile(
    r"\b[A-Z][a-z]+\s+(?=[IVXLC])(C{0,3}(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3}))(?![\w'’-])"
)
_ROMAN_VALUES = {"C": 100, "L": 50, "X": 10, "V": 5, "I": 1}


def read_phrases(text: str, *, source: bool) -> list[Quantity]:
    """Every such phrase of `text`, as one quantity each."""
    found: list[Quantity] = []
    for match in _SEVERAL.finditer(text):
        found.append(_vague(match, float(match[1])))
    for match in _ODDS.finditer(text):
        part, whole = float(match[1]), float(match[2].replace(",", ""))
        whole *= _THOUSANDS[match[3].lower()] if match[3] else 1.0
        if 0 < part < whole and not (match[2].isdigit() and not match[3] and 1000 <= whole <= 2100):
            # A share, or the count itself (`won 5 in 12 starts`: five wins).
            share = written(100 * part / whole, 2, 1.0, PERCENT, "about", source, grouped=False)
            count = written(part, 0, 1.0, PLAIN, "exact", source, grouped=False)
            found.append(Quantity(match[0], (share, count), match.start(), match.end(), True))
    for match in _RATIO.finditer(text):
        if float(match[2]):
            ratio = float(match[1]) / float(match[2])
            found.append(
                _quantity(match, written(ratio, 2, 1.0, RATIO, "about", source, grouped=False))
            )
    for match in _FEET_INCHES.finditer(text):
        inches = 12 * int(match[1]) + float(match[2])
        decimals = len(match[2].partition(".")[2])
        height = written(inches, decimals, 1.0, _INCH, "exact", source, grouped=False)
        found.append(Quantity(match[0].strip(), (height,), match.start(), match.end()))
    for match in _POWER_OF_TEN.finditer(text):
        found.append(_power_of_ten(match, source))
    if source:
        found += [_numeral(match) for match in _ROMAN.finditer(text)]
    return _apart(found)


def _power_of_ten(match: re.Match[str], source: bool) -> Quantity:
    """`3 × 10^6` is 3,000,000, as precise as its mantissa."""
    mantissa = match[1] or match[4] or "1"
    power = (match[2] or match[3] or match[5]).translate(_SUPERSCRIPTS).replace("−", "-")
    decimals = len(mantissa.partition(".")[2])
    value = written(
        float(mantissa), decimals, 10.0 ** int(power), PLAIN, "exact", source, grouped=False
    )
    return Quantity(match[0], (value,), match.start(), match.end())


def _numeral(match: re.Match[str]) -> Quantity:
    """A Roman numeral after a name (`World War II`, `Louis XIV`): a source states its value
    (for `World War 2`), as part of a name (see `Quantity.rank`)."""
    values = [_ROMAN_VALUES[ch] for ch in match[1]]
    value = sum(-v if v < after else v for v, after in zip(values, [*values[1:], 0], strict=True))
    return Quantity(match[1], (point(value),), match.start(1), match.end(1), rank=True)


def _vague(match: re.Match[str], scale: float) -> Quantity:
    """`several hundred` is 200 to 1,000 (100 to 200 is the judge's)."""
    return _quantity(match, Reading(2 * scale, 10 * scale, slack=scale))


def _quantity(match: re.Match[str], reading: Reading) -> Quantity:
    return Quantity(match[0], (reading,), match.start(), match.end(), hedged=True)


def _apart(found: list[Quantity]) -> list[Quantity]:
    """The first of overlapping phrases."""
    out: list[Quantity] = []
    for quantity in sorted(found, key=lambda q: q.start):
        if not any(q.start < quantity.end and quantity.start < q.end for q in out):
            out.append(quantity)
    return out
