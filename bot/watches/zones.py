"""The time zones a person may name for a watch: those of the tz database (IANA names, such as
Europe/Berlin), matched however they are typed (`europe/berlin`, `new york`), and the ones that
fit what someone has typed so far, for a chat's autocomplete."""

from __future__ import annotations

import functools
import zoneinfo

from bot.errors import RequestError

MAX_SUGGESTIONS = 25
"""Discord shows at most 25 choices."""
NOT_ZONES = frozenset({"Factory", "localtime", "posixrules"})


@functools.cache
def _zones() -> dict[str, str]:
    """Every zone by its folded spelling; read once (the database has about 600 names)."""
    return {_folded(name): name for name in zoneinfo.available_timezones() - NOT_ZONES}


def _folded(typed: str) -> str:
    return "_".join(typed.split()).casefold()


def known_zone(typed: str) -> str:
    """The zone `typed` names, as the tz database spells it. Raises RequestError."""
    found = _zones().get(_folded(typed))
    if found is None:
        raise RequestError(
            f"Unknown time zone {typed.strip()[:60]!r}: "
            "give its name in the tz database, such as Europe/Berlin or America/New_York."
        )
    return found


def zones_like(typed: str) -> list[str]:
    """Up to `MAX_SUGGESTIONS` zones for what has been typed so far: those whose name or city
    starts with it first, then those that contain it; alphabetical within each."""
    wanted = _folded(typed)
    names = sorted(_zones().items(), key=lambda item: item[1])

    def starts(folded: str) -> bool:
        return folded.startswith(wanted) or folded.rsplit("/", 1)[-1].startswith(wanted)

    starting = [name for folded, name in names if starts(folded)]
    containing = [name for folded, name in names if wanted in folded and not starts(folded)]
    return (starting + containing)[:MAX_SUGGESTIONS]
