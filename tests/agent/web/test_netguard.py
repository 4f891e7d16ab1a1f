"""The address policy: which URLs a fetch may connect to, and to which address, with a fake DNS."""

from __future__ import annotations

import socket
from ipaddress import IPv6Address, ip_address

import pytest

from bot.agent.web.netguard import NetGuard, blocked_reason, parse_loose_ipv4, system_resolver
from bot.config import Settings
from bot.errors import ConfigError, FetchRefused, ToolError

DNS = {
    "public.test": ["93.184.216.34"],
    "public6.test": ["2606:2800:220:1:248:1893:25c8:1946"],
    "xn--bcher-kva.test": ["93.184.216.34"],
    "nat64-public.test": ["64:ff9b::5db8:d822"],
    "metadata.test": ["169.254.169.254"],
    "mixed.test": ["93.184.216.34", "10.0.0.5"],
    "fly.test": ["fdaa:0:1a2b::3"],
    "nat64.test": ["64:ff9b::a9fe:a9fe"],
    "mapped.test": ["::ffff:127.0.0.1"],
    "cgnat.test": ["100.64.1.2"],
    "intranet.corp": ["10.1.2.3"],
    "service.corp": ["10.9.9.9"],
}
ALLOW = ["intranet.corp", "10.9.9.9:8443"]


async def fake_dns(host: str, port: int) -> list[str]:
    if host not in DNS:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    return DNS[host]


ALLOWED = [
    ("http://public.test/a", "93.184.216.34"),
    ("https://public.test/", "93.184.216.34"),
    ("http://PUBLIC.TEST./x", "93.184.216.34"),  # case and the trailing dot are the same host
    ("http://public.test:443/", "93.184.216.34"),
    ("http://public6.test/", "2606:2800:220:1:248:1893:25c8:1946"),
    ("http://bücher.test/", "93.184.216.34"),  # looked up in its IDNA form
    ("http://93.184.216.34/", "93.184.216.34"),
    ("http://[2606:4700::1111]/", "2606:4700::1111"),
    ("http://[::ffff:93.184.216.34]/", "93.184.216.34"),  # mapped: connect over IPv4
    ("http://nat64-public.test/", "64:ff9b::5db8:d822"),  # NAT64 of a public address
    ("http://intranet.corp/", "10.1.2.3"),  # allow-listed name, default port
    ("http://10.9.9.9:8443/", "10.9.9.9"),  # allow-listed address and port
    ("https://service.corp:8443/", "10.9.9.9"),  # a name that resolves to a listed address
]

REFUSED = [
    ("http://127.0.0.1/", "127.0.0.1 is a loopback address"),
    ("http://127.8.9.10/", "loopback"),
    ("http://10.0.0.5/", "10.0.0.5 is a private address"),
    ("http://172.16.3.4/", "private"),
    ("http://192.168.1.1/", "private"),
    ("http://169.254.169.254/latest/meta-data/", "link-local address (cloud metadata)"),
    ("http://100.64.0.1/", "carrier-grade NAT"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://224.0.0.1/", "multicast"),
    ("http://255.255.255.255/", "broadcast"),
    ("http://240.0.0.1/", "reserved"),
    ("http://192.0.2.10/", "documentation"),
    ("http://198.18.0.1/", "benchmarking"),
    ("http://[::1]/", "loopback"),
    ("http://[::]/", "unspecified"),
    ("http://[::ffff:127.0.0.1]/", "127.0.0.1 wrapped in IPv6, a loopback address"),
    ("http://[::ffff:a9fe:a9fe]/", "169.254.169.254 wrapped in IPv6"),
    ("http://[::127.0.0.1]/", "IPv4-compatible"),
    ("http://[2002:7f00:1::]/", "6to4 tunnel address (embeds 127.0.0.1)"),
    ("http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "Teredo"),
    ("http://[64:ff9b::a9fe:a9fe]/", "169.254.169.254 wrapped in IPv6, a link-local"),
    ("http://[64:ff9b:1::a9fe:a9fe]/", "local-use NAT64"),
    ("http://[fc00::1]/", "unique-local"),
    ("http://[fdaa::2]/", "unique-local"),  # Fly.io's private network
    ("http://[fe80::1]/", "link-local"),
    ("http://[fe80::1%25eth0]/", "zone id"),
    ("http://[fec0::1]/", "site-local"),
    ("http://[ff02::1]/", "multicast"),
    ("http://[2001:db8::1]/", "documentation"),
    ("http://[5f00::1]/", "reserved"),
    ("http://metadata.test/", "metadata.test resolves to 169.254.169.254, which is a link-local"),
    ("http://mixed.test/", "mixed.test resolves to 10.0.0.5, which is a private address"),
    ("http://fly.test/", "unique-local"),
    ("http://nat64.test/", "169.254.169.254 wrapped in IPv6"),
    ("http://mapped.test/", "127.0.0.1 wrapped in IPv6"),
    ("http://cgnat.test/", "carrier-grade NAT"),
    ("http://2130706433/", "non-standard spelling of 127.0.0.1"),
    ("http://0x7f.1/", "non-standard spelling of 127.0.0.1"),
    ("http://017700000001/", "non-standard spelling of 127.0.0.1"),
    ("http://127.1/", "non-standard spelling of 127.0.0.1"),
    ("http://0xa9fea9fe/", "non-standard spelling of 169.254.169.254"),
    ("http://1.2.3.4.5/", "not a valid IPv4 address"),
    ("http://example.123/", "not a valid IPv4 address"),
    ("http://0177.0.0.1/", "not a valid URL"),
    ("http://127.0.0.1./", "127.0.0.1 is a loopback address"),
    ("http://xn--/", "characters a host name cannot have"),
    (f"http://{'a' * 64}.test/", "longer than DNS allows"),
    (f"http://{('a' * 60 + '.') * 5}test/", "longer than DNS allows"),  # 309 characters
    ("http://localhost/", "local machine"),
    ("http://LocalHost./", "local machine"),
    ("http://api.localhost/", "local machine"),
    ("http://good.com@127.0.0.1/", "user name or password"),
    ("http://public.test:pw@public.test/", "user name or password"),
    ("http://%31%32%37.0.0.1/", "percent-escapes"),
    ("http:///etc/passwd", "no host"),
    ("file:///etc/passwd", "only http and https URLs are read, not file:"),
    ("ftp://public.test/", "not ftp:"),
    ("javascript:alert(1)", "not javascript:"),
    ("gopher://127.0.0.1:70/", "not gopher:"),
    ("data:text/html,<h1>hi</h1>", "not data:"),
    ("//public.test/a", "without a scheme"),
    ("http://public.test:8080/", "port 8080 is not allowed"),
    ("http://public.test:22/", "port 22 is not allowed"),
    ("http://public.test:99999/", "99999 is not a valid port"),
    ("http://public.test:0/", "0 is not a valid port"),
    ("http://intranet.corp:8080/", "port 8080 is not allowed"),  # listed without a port: 80/443
    ("http://10.9.9.9/", "10.9.9.9 is a private address"),  # listed for port 8443 only
]


@pytest.fixture
def guard() -> NetGuard:
    return NetGuard(ALLOW, fake_dns)


@pytest.mark.parametrize(("url", "ip"), ALLOWED)
async def test_allowed_urls_are_pinned_to_the_checked_address(
    guard: NetGuard, url: str, ip: str
) -> None:
    target = await guard.check(url)

    assert target.ip == ip_address(ip)
    assert target.pinned_url().host == ip


@pytest.mark.parametrize(("url", "reason"), REFUSED)
async def test_refused_urls_say_why(guard: NetGuard, url: str, reason: str) -> None:
    with pytest.raises(FetchRefused, match=r"^refused: ") as refused:
        await guard.check(url)

    assert reason in str(refused.value)


def test_the_tables_are_long_enough_to_mean_something() -> None:
    assert len(ALLOWED) + len(REFUSED) >= 30


async def test_host_header_and_sni_name_keep_the_name_the_url_gave(guard: NetGuard) -> None:
    plain = await guard.check("http://Public.Test./a?b=1")
    custom = await guard.check("https://service.corp:8443/x")
    literal = await guard.check("http://[::ffff:93.184.216.34]/")

    assert (plain.host, plain.host_header, str(plain.pinned_url())) == (
        "public.test",
        "public.test",
        "http://93.184.216.34/a?b=1",
    )
    assert (custom.host, custom.host_header) == ("service.corp", "service.corp:8443")
    assert literal.host_header == "[::ffff:93.184.216.34]"


async def test_a_name_that_does_not_resolve_is_a_tool_error_not_a_refusal(guard: NetGuard) -> None:
    with pytest.raises(ToolError, match=r"could not resolve nowhere\.test") as failed:
        await guard.check("http://nowhere.test/")

    assert not isinstance(failed.value, FetchRefused)


async def test_the_resolver_is_asked_once_with_host_and_port() -> None:
    calls: list[tuple[str, int]] = []

    async def recording(host: str, port: int) -> list[str]:
        calls.append((host, port))
        return ["93.184.216.34"]

    await NetGuard(resolver=recording).check("https://news.test/story")
    await NetGuard(resolver=recording).check("http://93.184.216.34/")  # a literal: no lookup

    assert calls == [("news.test", 443)]


@pytest.mark.parametrize(
    ("address", "why"),
    [
        # Each of these is misjudged by some version of `ipaddress`; the tables are not.
        ("100.64.0.1", "a carrier-grade NAT address"),
        ("64:ff9b::a9fe:a9fe", "169.254.169.254 wrapped in IPv6, a link-local address"),
        ("::ffff:10.0.0.1", "10.0.0.1 wrapped in IPv6, a private address"),
        ("192.0.0.170", "an IETF protocol address"),
        ("8.8.8.8", None),
        ("1.1.1.1", None),
        ("2606:4700:4700::1111", None),
    ],
)
def test_blocked_reason_uses_the_tables(address: str, why: str | None) -> None:
    reason = blocked_reason(ip_address(address))

    assert reason == why if why is None else reason is not None and reason.startswith(why)


@pytest.mark.parametrize(
    ("spelling", "address"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        ("0X7F.0.0.01", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("10.1.258", "10.1.1.2"),
        ("1.2.3.4", "1.2.3.4"),
        ("09.1.1.1", None),
        ("256.1", None),
        ("1.2.3.4.5", None),
        ("4294967296", None),
        ("example.com", None),
    ],
)
def test_loose_ipv4_spellings_decode_like_inet_aton(spelling: str, address: str | None) -> None:
    decoded = parse_loose_ipv4(spelling)

    assert (str(decoded) if decoded else None) == address


def test_allow_list_comes_from_settings() -> None:
    settings = Settings.from_mapping(
        {"RESEARCH_BOT_FETCH_ALLOW_HOSTS": "wiki.corp, 127.0.0.1:8080, [::1]:9000"}
    )

    NetGuard(settings.fetch_allow_hosts, fake_dns)  # parses without complaint

    assert settings.fetch_allow_hosts == ["wiki.corp", "127.0.0.1:8080", "[::1]:9000"]


async def test_ipv6_allow_entries_match_any_spelling_of_the_address() -> None:
    guard = NetGuard(["[0:0::1]:9000"], fake_dns)

    target = await guard.check("http://[::1]:9000/")

    assert target.ip == IPv6Address("::1")


@pytest.mark.parametrize("entry", ["http://wiki.corp/", "wiki.corp/path", "user@wiki.corp", ":80"])
def test_a_malformed_allow_entry_is_a_config_error(entry: str) -> None:
    with pytest.raises(ConfigError, match="not host"):
        NetGuard([entry], fake_dns)


async def test_a_name_too_long_for_dns_never_reaches_the_system_resolver() -> None:
    """getaddrinfo's idna codec would raise UnicodeError on a 64-character label."""
    with pytest.raises(FetchRefused, match="longer than DNS allows"):
        await NetGuard().check(f"http://{'a' * 64}.example.com/")


async def test_the_system_resolver_answers_for_a_literal_without_the_network() -> None:
    assert await system_resolver("127.0.0.1", 80) == ["127.0.0.1"]
