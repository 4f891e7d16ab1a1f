"""Address policy for outbound fetches: which URLs, hosts, ports and IP addresses may be read.

Every address a fetch would connect to is judged against the explicit tables below (first
match wins), never against `ipaddress.is_private` and friends: Python 3.11.7 has
CVE-2024-4032, and even fixed versions call 100.64.0.0/10 neither private nor global and
64:ff9b::a9fe:a9fe global.

    range               why it is refused
    0.0.0.0/8           "this network"; 0.0.0.0 reaches the local host on Linux
    10.0.0.0/8          private (RFC 1918)
    100.64.0.0/10       carrier-grade NAT (RFC 6598): inside a provider's network
    127.0.0.0/8         loopback
    169.254.0.0/16      link-local; 169.254.169.254 is the cloud metadata service
    172.16.0.0/12       private (RFC 1918)
    192.0.0.0/24        IETF protocol assignments
    192.0.2.0/24        documentation (TEST-NET-1)
    192.88.99.0/24      6to4 relay anycast (deprecated)
    192.168.0.0/16      private (RFC 1918)
    198.18.0.0/15       benchmarking (RFC 2544)
    198.51.100.0/24     documentation (TEST-NET-2)
    203.0.113.0/24      documentation (TEST-NET-3)
    224.0.0.0/4         multicast
    255.255.255.255/32  broadcast
    240.0.0.0/4         reserved
    ::/128, ::1/128     unspecified, loopback
    ::ffff:0:0/96       IPv4-mapped: the embedded IPv4 address is judged (and connected to)
    64:ff9b::/96        NAT64 (RFC 6052): the embedded IPv4 address is judged
    ::/96               IPv4-compatible (deprecated)
    ::ffff:0:0:0/96     IPv4-translated (SIIT)
    64:ff9b:1::/48      local-use NAT64 (RFC 8215): the translator is a private network's
    100::/64            discard-only
    2001::/32           Teredo: a tunnel to an embedded IPv4 address
    2001::/23           IETF protocol assignments
    2001:db8::/32       documentation
    2002::/16           6to4: a tunnel to the embedded IPv4 address
    3fff::/20           documentation (RFC 9637)
    fc00::/7            unique local; Fly.io's private network fdaa::/16 is inside it
    fe80::/10           link-local
    fec0::/10           site-local (deprecated)
    ff00::/8            multicast
    any other IPv6      outside global unicast 2000::/3, so reserved

Host names are refused before any lookup when they are `localhost` (or under it), carry a
zone id or percent-escapes, are longer than DNS allows (253 characters, 63 a label), or spell
an IPv4 address in any form but the dotted quad (`2130706433`, `0x7f.1`, `017700000001`,
`127.1`): those spellings exist to slip past checks.

Allow-list entries (`Settings.fetch_allow_hosts`) are `host`, `host:port`, `[v6]` or
`[v6]:port`. A listed host or address skips the address tables. An entry with a port allows
that port only; an entry without one allows ports 80 and 443 only. An entry that is an IP
address also matches any name that resolves to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address
from typing import Protocol

import httpx

from bot.errors import ConfigError, FetchRefused, ToolError

IPAddress = IPv4Address | IPv6Address
DEFAULT_PORTS = {"http": 80, "https": 443}

_V4_TABLE = tuple(
    (IPv4Network(net), why)
    for net, why in (
        ("0.0.0.0/8", "an unspecified address"),
        ("10.0.0.0/8", "a private address"),
        ("100.64.0.0/10", "a carrier-grade NAT address"),
        ("127.0.0.0/8", "a loopback address"),
        ("169.254.0.0/16", "a link-local address (cloud metadata)"),
        ("172.16.0.0/12", "a private address"),
        ("192.0.0.0/24", "an IETF protocol address"),
        ("192.0.2.0/24", "a documentation address"),
        ("192.88.99.0/24", "a 6to4 relay address"),
        ("192.168.0.0/16", "a private address"),
        ("198.18.0.0/15", "a benchmarking address"),
        ("198.51.100.0/24", "a documentation address"),
        ("203.0.113.0/24", "a documentation address"),
        ("224.0.0.0/4", "a multicast address"),
        ("255.255.255.255/32", "the broadcast address"),
        ("240.0.0.0/4", "a reserved address"),
    )
)
_V6_TABLE = tuple(
    (IPv6Network(net), why)
    for net, why in (
        ("::/128", "an unspecified address"),
        ("::1/128", "a loopback address"),
        ("::/96", "an IPv4-compatible address"),
        ("::ffff:0:0:0/96", "an IPv4-translated address"),
        ("64:ff9b:1::/48", "a local-use NAT64 address"),
        ("100::/64", "a discard-only address"),
        ("2001::/32", "a Teredo tunnel address"),
        ("2001:db8::/32", "a documentation address"),
        ("2001::/23", "an IETF protocol address"),
        ("2002::/16", "a 6to4 tunnel address"),
        ("3fff::/20", "a documentation address"),
        ("fc00::/7", "a unique-local (private) address"),
        ("fe80::/10", "a link-local address"),
        ("fec0::/10", "a site-local address"),
        ("ff00::/8", "a multicast address"),
    )
)
# Translations whose embedded IPv4 address is where the packets really go.
_V4_IN_V6 = (IPv6Network("::ffff:0:0/96"), IPv6Network("64:ff9b::/96"))
_GLOBAL_UNICAST = IPv6Network("2000::/3")

_NUMERIC_LABEL = re.compile(r"(0x[0-9a-f]*|[0-9]+)")
_HOSTNAME = re.compile(r"[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*")


def blocked_reason(ip: IPAddress) -> str | None:
    """Why a connection to `ip` is refused (a phrase like "a private address"), or None."""
    if isinstance(ip, IPv4Address):
        return next((why for net, why in _V4_TABLE if ip in net), None)
    if any(ip in net for net in _V4_IN_V6):
        inner = IPv4Address(int(ip) & 0xFFFF_FFFF)
        why = blocked_reason(inner)
        return None if why is None else f"{inner} wrapped in IPv6, {why}"
    why = next((why for net, why in _V6_TABLE if ip in net), None)
    if why is None and ip not in _GLOBAL_UNICAST:
        why = "a reserved address"
    embedded = ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
    return f"{why} (embeds {embedded})" if why and embedded else why


def parse_loose_ipv4(host: str) -> IPv4Address | None:
    """The IPv4 address `host` spells under inet_aton's rules (1-4 parts, octal, hex), or None."""
    parts = host.lower().split(".")
    if not 1 <= len(parts) <= 4 or not all(_NUMERIC_LABEL.fullmatch(p) for p in parts):
        return None
    values: list[int] = []
    for part in parts:
        if part.startswith("0x"):
            values.append(int(part[2:] or "0", 16))
        elif len(part) > 1 and part.startswith("0"):
            if not set(part) <= set("01234567"):
                return None
            values.append(int(part, 8))
        else:
            values.append(int(part))
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (4 - len(head)):
        return None
    number = last
    for index, value in enumerate(head):
        number += value << (8 * (3 - index))
    return IPv4Address(number)


class Resolver(Protocol):
    """Turns a host name into the IP addresses (as strings) a connection could go to."""

    async def __call__(self, host: str, port: int) -> list[str]: ...


async def system_resolver(host: str, port: int) -> list[str]:
    """The operating system's resolver, without blocking the event loop."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


class AllowList:
    """`host[:port]` entries let through although private; see the module docstring."""

    def __init__(self, entries: Iterable[str] = ()) -> None:
        self._entries = {_parse_entry(entry) for entry in entries if entry.strip()}

    def permits(self, host: str, port: int) -> bool:
        if (host, port) in self._entries:
            return True
        return port in DEFAULT_PORTS.values() and (host, None) in self._entries

    def lists(self, host: str) -> bool:
        """Whether `host` has an entry, for any port."""
        return any(entry_host == host for entry_host, _ in self._entries)


def _parse_entry(entry: str) -> tuple[str, int | None]:
    try:
        url = httpx.URL(f"http://{entry.strip()}")
        host = url.host.lower().removesuffix(".")
    except httpx.InvalidURL as exc:
        raise ConfigError(f"fetch allow-list entry {entry!r} is not host[:port]") from exc
    if not host or url.path not in ("", "/") or url.userinfo:
        raise ConfigError(f"fetch allow-list entry {entry!r} is not host[:port]")
    with contextlib.suppress(ValueError):
        host = str(ip_address(host))  # one spelling per address, as `str(ip)` will compare
    return host, url.port


@dataclass(frozen=True)
class Target:
    """A checked URL and the one address the connection for it must go to."""

    url: httpx.URL
    host: str
    """The URL's host, lower-case ASCII without a trailing dot: the Host header and the SNI name."""
    port: int
    ip: IPAddress

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if DEFAULT_PORTS[self.url.scheme] == self.port else f"{host}:{self.port}"

    def pinned_url(self) -> httpx.URL:
        return self.url.copy_with(host=str(self.ip), port=self.port)


class NetGuard:
    """Checks a URL, resolves its host once and picks the address a fetch may connect to."""

    def __init__(self, allow_hosts: Iterable[str] = (), resolver: Resolver | None = None) -> None:
        self._allow = AllowList(allow_hosts)
        self._resolve: Resolver = resolver or system_resolver

    async def check(self, url: str | httpx.URL) -> Target:
        """The target to connect to, or FetchRefused (ToolError when the name does not resolve)."""
        try:
            parsed = httpx.URL(url)
        except httpx.InvalidURL as exc:
            raise FetchRefused(f"refused: {str(url)[:200]!r} is not a valid URL") from exc
        if parsed.scheme not in DEFAULT_PORTS:
            scheme = f"{parsed.scheme}:" if parsed.scheme else "a URL without a scheme"
            raise FetchRefused(f"refused: only http and https URLs are read, not {scheme}")
        if parsed.userinfo:
            raise FetchRefused("refused: URLs with a user name or password are not read")
        port = DEFAULT_PORTS[parsed.scheme] if parsed.port is None else parsed.port
        if not 0 < port < 65536:
            raise FetchRefused(f"refused: {port} is not a valid port")
        host, literal = _check_host(parsed.raw_host.decode("ascii").lower())
        ips = [literal] if literal else await self._lookup(host, port)
        for ip in ips:
            self._check_address(host, port, ip, resolved=literal is None)
        # A mapped address goes out over IPv4 anyway; connecting to the IPv4 form needs no
        # dual-stack socket.
        chosen = ips[0].ipv4_mapped if isinstance(ips[0], IPv6Address) else None
        return Target(url=parsed, host=host, port=port, ip=chosen or ips[0])

    def _check_address(self, host: str, port: int, ip: IPAddress, *, resolved: bool) -> None:
        """Any refused address refuses the URL: a name that points inside at all is suspect."""
        if self._allow.permits(host, port) or self._allow.permits(str(ip), port):
            return
        why = blocked_reason(ip)
        # A host listed for other ports is refused for its port; any other for its address.
        listed = self._allow.lists(host) or self._allow.lists(str(ip))
        if port not in DEFAULT_PORTS.values() and (why is None or listed):
            raise FetchRefused(f"refused: port {port} is not allowed (only 80 and 443)")
        if why is not None:
            name = f"{host} resolves to {ip}, which" if resolved else host
            raise FetchRefused(f"refused: {name} is {why}")

    async def _lookup(self, host: str, port: int) -> list[IPAddress]:
        try:
            answers = await self._resolve(host, port)
        except OSError as exc:
            raise ToolError(f"could not resolve {host}: {exc.strerror or exc}") from exc
        if not answers:
            raise ToolError(f"could not resolve {host}: no addresses")
        return [ip_address(answer) for answer in answers]


def _check_host(host: str) -> tuple[str, IPAddress | None]:
    """The normalized host and, for an IP literal, its address; refuses tricky spellings."""
    if "%" in host:
        raise FetchRefused(f"refused: host {host!r} has a zone id or percent-escapes")
    if ":" in host:
        try:
            return host, IPv6Address(host)
        except ValueError as exc:
            raise FetchRefused(f"refused: {host!r} is not a valid IPv6 address") from exc
    host = host.removesuffix(".")
    if not host:
        raise FetchRefused("refused: the URL has no host")
    if _NUMERIC_LABEL.fullmatch(host.rsplit(".", 1)[-1]):
        ip = parse_loose_ipv4(host)
        if ip is None:
            raise FetchRefused(f"refused: host {host!r} is not a valid IPv4 address")
        if str(ip) != host:
            raise FetchRefused(f"refused: host {host!r} is a non-standard spelling of {ip}")
        return host, ip
    if not _HOSTNAME.fullmatch(host):
        raise FetchRefused(f"refused: host {host!r} has characters a host name cannot have")
    if len(host) > 253 or any(len(label) > 63 for label in host.split(".")):
        # Also what getaddrinfo's idna codec would raise UnicodeError on.
        raise FetchRefused("refused: the host name is longer than DNS allows")
    if host == "localhost" or host.endswith(".localhost"):
        raise FetchRefused(f"refused: {host} is the local machine")
    return host, None
