"""The shapes of addresses settings may hold, checked at start so a refusal names its setting:
an API's http(s) URL, and an entry of the page reader's allow-list."""

from __future__ import annotations

import re
from ipaddress import IPv6Address
from urllib.parse import urlsplit

# `host`, `host:port`, `[v6]` or `[v6]:port`: the entries the page reader's allow-list reads.
_ALLOW_ENTRY = re.compile(r"(?P<host>[^\s/:@\[\]?#]+|\[(?P<v6>[^\]]+)\])(?::(?P<port>\d{1,5}))?/?")


def is_web_address(value: str) -> bool:
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises on a port that is not a number, or out of range
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def is_allow_entry(entry: str) -> bool:
    shape = _ALLOW_ENTRY.fullmatch(entry)
    if shape is None or (shape["port"] is not None and not 0 < int(shape["port"]) < 65_536):
        return False
    try:
        IPv6Address(shape["v6"] or "::")
    except ValueError:
        return False
    return True
