"""The words numbers are written with: scales, units, currencies, bounds and hedges, in the
languages reports are written in. Data only; `quantities` reads text with it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Unit:
    """What a number measures: `dimension` (`length`, `temperature`, `currency:EUR`…) and how
    to bring it to that dimension's base (`value * factor + offset`)."""

    dimension: str
    factor: float = 1.0
    offset: float = 0.0

    def base(self, value: float) -> float:
        return value * self.factor + self.offset


SCALES: dict[str, tuple[float, ...]] = {
    # Several readings where languages disagree: German "Billion" is 10^12, English 10^9.
    "k": (1e3,),
    "thousand": (1e3,),
    "thousands": (1e3,),
    "tsd": (1e3,),
    "tausend": (1e3,),
    "mil": (1e3,),
    "mille": (1e3,),
    "mila": (1e3,),
    "тыс": (1e3,),
    "lakh": (1e5,),
    "lakhs": (1e5,),
    "lac": (1e5,),
    "crore": (1e7,),
    "crores": (1e7,),
    "cr": (1e7,),
    "m": (1e6,),
    "mn": (1e6,),
    "mln": (1e6,),
    "mio": (1e6,),
    "million": (1e6,),
    "millions": (1e6,),
    "millionen": (1e6,),
    "millón": (1e6,),
    "millones": (1e6,),
    "milione": (1e6,),
    "milioni": (1e6,),
    "milhão": (1e6,),
    "milhões": (1e6,),
    "млн": (1e6,),
    "миллион": (1e6,),
    "миллиона": (1e6,),
    "миллионов": (1e6,),
    "b": (1e9,),
    "bn": (1e9,),
    "bln": (1e9,),
    "billion": (1e9,),
    "billions": (1e9,),
    "mrd": (1e9,),
    "md": (1e9,),
    "mds": (1e9,),
    "milliarde": (1e9,),
    "milliarden": (1e9,),
    "milliard": (1e9,),
    "milliards": (1e9,),
    "miliardo": (1e9,),
    "miliardi": (1e9,),
    "bilhão": (1e9, 1e12),
    "bilhões": (1e9, 1e12),
    "млрд": (1e9,),
    "billionen": (1e12,),
    "billón": (1e12,),
    "billones": (1e12,),
    "trillion": (1e12,),
    "trillions": (1e12,),
    "трлн": (1e12,),
    "dozen": (12.0,),
    "decades": (10.0,),
    "centuries": (100.0,),
    "万": (1e4,),
    "億": (1e8,),
    "兆": (1e12,),
}
"""Lower-cased; `billion` has its German reading only when written `Billion` (see quantities)."""

_LENGTH = {
    "mm": 1e-3,
    "millimetres": 1e-3,
    "millimeters": 1e-3,
    "cm": 1e-2,
    "centimetres": 1e-2,
    "centimeters": 1e-2,
    "metres": 1.0,
    "meters": 1.0,
    "metre": 1.0,
    "meter": 1.0,
    "km": 1e3,
    "kilometres": 1e3,
    "kilometers": 1e3,
    "kilometre": 1e3,
    "kilometer": 1e3,
    "in": 0.0254,
    "inch": 0.0254,
    "inches": 0.0254,
    "ft": 0.3048,
    "feet": 0.3048,
    "foot": 0.3048,
    "yd": 0.9144,
    "yards": 0.9144,
    "mi": 1609.344,
    "mile": 1609.344,
    "miles": 1609.344,
    "meilen": 1609.344,
}
_MASS = {
    "mg": 1e-6,
    "g": 1e-3,
    "grams": 1e-3,
    "kg": 1.0,
    "kilograms": 1.0,
    "kilogrammes": 1.0,
    "t": 1e3,
    "tonnes": 1e3,
    "tonne": 1e3,
    "lb": 0.45359237,
    "lbs": 0.45359237,
    "oz": 0.028349523,
}
_AREA = {
    "m²": 1.0,
    "m2": 1.0,
    "km²": 1e6,
    "km2": 1e6,
    "sq km": 1e6,
    "square kilometres": 1e6,
    "square kilometers": 1e6,
    "ha": 1e4,
    "hectares": 1e4,
    "acres": 4046.8564,
    "sq mi": 2589988.1,
    "square miles": 2589988.1,
}
_VOLUME = {"l": 1.0, "litres": 1.0, "liters": 1.0, "ml": 1e-3, "gallons": 3.785411784}
_SPEED = {"km/h": 1 / 3.6, "kph": 1 / 3.6, "mph": 0.44704, "m/s": 1.0, "knots": 0.514444}
_POWER = {"w": 1.0, "kw": 1e3, "mw": 1e6, "gw": 1e9, "watts": 1.0, "megawatts": 1e6}
_DURATION = {"seconds": 1 / 86400, "minutes": 1 / 1440, "minute": 1 / 1440, "hours": 1 / 24}
_DURATION |= {"hour": 1 / 24, "days": 1.0, "day": 1.0, "weeks": 7.0, "week": 7.0}
_DURATION |= {"months": 30.4375, "month": 30.4375, "years": 365.25, "year": 365.25}
_DURATION |= {"yrs": 365.25, "yr": 365.25}
_ENERGY = {"wh": 1.0, "kwh": 1e3, "mwh": 1e6, "gwh": 1e9, "twh": 1e12}

UNITS: dict[str, tuple[Unit, ...]] = {
    **{w: (Unit("length", f),) for w, f in _LENGTH.items()},
    **{w: (Unit("mass", f),) for w, f in _MASS.items()},
    **{w: (Unit("area", f),) for w, f in _AREA.items()},
    **{w: (Unit("volume", f),) for w, f in _VOLUME.items()},
    **{w: (Unit("speed", f),) for w, f in _SPEED.items()},
    **{w: (Unit("power", f),) for w, f in _POWER.items()},
    **{w: (Unit("energy", f),) for w, f in _ENERGY.items()},
    **{w: (Unit("duration", f),) for w, f in _DURATION.items()},
    "tons": (Unit("mass", 907.18474), Unit("mass", 1e3), Unit("mass", 1016.0469)),
    "pounds": (Unit("mass", 0.45359237), Unit("currency:GBP")),
    "°c": (Unit("temperature"),),
    "℃": (Unit("temperature"),),
    "degrees celsius": (Unit("temperature"),),
    "celsius": (Unit("temperature"),),
    "°f": (Unit("temperature", 5 / 9, -160 / 9),),
    "℉": (Unit("temperature", 5 / 9, -160 / 9),),
    "degrees fahrenheit": (Unit("temperature", 5 / 9, -160 / 9),),
    "fahrenheit": (Unit("temperature", 5 / 9, -160 / 9),),
}
"""Lower-cased unit words after a number. `m` is read by quantities (metres or million)."""

GLUED_UNITS = {"c": "°c", "f": "°f", "km": "km", "kg": "kg", "mm": "mm", "cm": "cm", "m": "m"}
"""Units written against the digits (`1.9C`, `5km`): `C` and `F` only count glued."""

CURRENCIES: dict[str, str] = {
    "$": "USD",
    "us$": "USD",
    "usd": "USD",
    "dollar": "USD",
    "dollars": "USD",
    "dólares": "USD",
    "dollari": "USD",
    "€": "EUR",
    "eur": "EUR",
    "euro": "EUR",
    "euros": "EUR",
    "£": "GBP",
    "gbp": "GBP",
    "¥": "JPY",
    "jpy": "JPY",
    "yen": "JPY",
    "円": "JPY",
    "₹": "INR",
    "inr": "INR",
    "rs": "INR",
    "rupees": "INR",
    "chf": "CHF",
    "cny": "CNY",
    "rmb": "CNY",
    "yuan": "CNY",
    "₽": "RUB",
    "rub": "RUB",
    "рублей": "RUB",
}
"""Every `$` is one currency: a claim's `$` and a source's `US$` are the same."""

PERCENT: tuple[str, ...] = (
    "%",
    "percent",
    "per cent",
    "pct",
    "prozent",
    "pour cent",
    "por ciento",
    "per cento",
)
POINTS: tuple[str, ...] = ("percentage points", "percentage point", "points", "pp", "prozentpunkte")

ABOVE: tuple[str, ...] = (
    "more than",
    "above",
    "greater than",
    "exceeding",
    "in excess of",
    "upwards of",
    "north of",
)
ABOVE += ("after", "later than", "mehr als", "über", "plus de", "más de", "più di", "mais de")
# `over` and `under` also mean `during` and `led by` (`over 3 days`, `under 2 coaches`): the
# number itself is not refuted by them.
AT_LEAST: tuple[str, ...] = (
    "at least",
    "no fewer than",
    "no less than",
    "a minimum of",
    "over",
    "since",
    "mindestens",
)
AT_LEAST += ("au moins", "al menos", "almeno", "pelo menos", "не менее")
BELOW: tuple[str, ...] = (
    "less than",
    "fewer than",
    "below",
    "before",
    "earlier than",
    "weniger als",
    "south of",
)
BELOW += ("unter", "moins de", "menos de", "meno di", "avant", "antes de", "prima del")
AT_MOST: tuple[str, ...] = (
    "at most",
    "up to",
    "as many as",
    "as much as",
    "as high as",
    "no more than",
    "a maximum of",
    "under",
    "top",
    "by",
    "bis zu",
    "jusqu'à",
    "hasta",
)
NEARLY: tuple[str, ...] = ("nearly", "almost", "just under", "close to", "knapp", "presque")
NEARLY += ("près de", "casi", "quasi", "quase", "почти")
ABOUT: tuple[str, ...] = (
    "about",
    "around",
    "approximately",
    "roughly",
    "some",
    "circa",
    "ca.",
    "c.",
    "~",
    "≈",
)
ABOUT += ("an estimated", "estimated", "approx.", "etwa", "rund", "ungefähr", "environ")
ABOUT += ("alrededor de", "unos", "unas", "cerca de", "circa", "aproximadamente", "около")
ABOUT += ("примерно", "約")
QUALIFIERS = (ABOVE, AT_LEAST, BELOW, AT_MOST, NEARLY, ABOUT)
"""The bounds and hedges, from the widest above to the loosest."""
MINUS: tuple[str, ...] = ("minus", "moins", "menos", "meno")

_LABEL_WORDS = (
    "type phase stage grade version model no. number chapter article section figure fig. table "
    "class category series route flight vitamin level tier step item page vol. volume part iso"
)
LABELS = frozenset(_LABEL_WORDS.split(" "))
"""Lower-case words after which a number names a thing (`type 2`, `phase 3`), not an amount."""

MONTHS: dict[str, int] = {}
for _names in (
    "january february march april may june july august september october november december",
    "jan feb mar apr may jun jul aug sep oct nov dec",
    "januar februar märz april mai juni juli august september oktober november dezember",
    "janvier février mars avril mai juin juillet août septembre octobre novembre décembre",
    "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre",
    "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre dicembre",
    "janeiro fevereiro março abril maio junho julho agosto setembro outubro novembro dezembro",
):
    for _i, _name in enumerate(_names.split(), start=1):
        MONTHS.setdefault(_name, _i)
MONTHS["sept"] = 9

DECADE_WORDS = {
    "twenties": 1920,
    "thirties": 1930,
    "forties": 1940,
    "fifties": 1950,
    "sixties": 1960,
    "seventies": 1970,
    "eighties": 1980,
    "nineties": 1990,
}
_NUMERATORS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "seven": 7, "nine": 9}
_DENOMINATORS = {"third": 3, "quarter": 4, "fourth": 4, "fifth": 5, "sixth": 6, "eighth": 8}
_DENOMINATORS |= {"tenth": 10}
FRACTIONS: dict[str, float] = {"half": 50.0}
for _top, _n in _NUMERATORS.items():
    for _bottom, _d in _DENOMINATORS.items():
        if _n < _d:
            for _gap in (" ", "-"):
                FRACTIONS[f"{_top}{_gap}{_bottom}{'s' if _n > 1 else ''}"] = 100 * _n / _d
FRACTIONS |= {"three quarters": 75.0, "three-quarters": 75.0}
"""Shares written in words, as percentages (`a third`, `two-fifths`, `three quarters`): read
before `of`, `the` or a verb (`a quarter of …`), or after a bound (`more than a third`)."""
RATIOS = {"doubled": 2.0, "tripled": 3.0, "trebled": 3.0, "quadrupled": 4.0, "halved": 0.5}
