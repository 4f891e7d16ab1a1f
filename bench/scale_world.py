"""The fake world of bench/scale.py, served from its own process: model, search, web pages.

The model's script, by topic: "Company n" searches, reads two pages, then one more, and writes
its report; "Hostile n" reads a gzip bomb (n even) or a 30 MB chunked page (n odd), then
writes its report. Every reply takes 0.5 s.
"""

from __future__ import annotations

import asyncio
import random
import re
from multiprocessing.connection import Connection
from typing import Any

from aiohttp import web as aioweb

from tests.fakes.anthropic_api import FakeAnthropic, Scripted, reply_text, reply_tools
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import FakeWeb, gzip_bomb

TOPIC = re.compile(r"(Company|Hostile|Warmup) (\d+)")
DELAY_S = 0.5
PAGES = 40
REPORT = "# Report\n\n## TL;DR\n- Found what there was to find [1].\n"
WORDS = [
    "the",
    "company",
    "said",
    "its",
    "revenue",
    "grew",
    "in",
    "the",
    "quarter",
    "as",
    "customers",
    "in",
    "europe",
    "and",
    "north",
    "america",
    "bought",
    "more",
    "robots",
    "for",
    "warehouses",
    "while",
    "investors",
    "led",
    "a",
    "new",
    "funding",
    "round",
    "engineers",
    "software",
    "service",
    "factory",
    "margin",
    "growth",
    "market",
    "share",
    "pricing",
    "contracts",
]


def article(rng: random.Random, text_chars: int) -> str:
    """An article-like page: navigation, sidebar, comments and scripts around the text."""
    paragraphs, total = [], 0
    while total < text_chars:
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 80)))
        paragraphs.append(f"<p>{words.capitalize()}.</p>")
        total += len(words) + 1
    nav = "".join(f'<li><a href="/section/{i}">Section {i}</a></li>' for i in range(120))
    side = "".join(
        f'<div class="teaser"><a href="/story/{i}"><img src="/i/{i}.jpg" alt="">'
        f"<span>Related story number {i}</span></a></div>"
        for i in range(60)
    )
    comments = "".join(
        f'<div class="comment"><b>user{i}</b><p>Nice one, thanks.</p></div>' for i in range(30)
    )
    script = "<script>window.dataLayer=[];" + "x=1;" * 2000 + "</script>"
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>Acme news story</title>"
        f"{script}<style>.a{{color:red}}</style></head><body><header><nav><ul>{nav}</ul>"
        f"</nav></header><main><article><h1>Acme Robotics update</h1>{''.join(paragraphs)}"
        f"</article><aside>{side}</aside><section class='comments'>{comments}</section></main>"
        "<footer>© Example News. Privacy. Cookies. Terms.</footer></body></html>"
    )


def pages() -> list[str]:
    rng = random.Random(9)
    # One page in five is short: trafilatura then tries readability and justext as well.
    return [
        article(rng, rng.randint(200, 400) if k % 5 == 4 else rng.randint(3_000, 12_000))
        for k in range(PAGES)
    ]


async def huge(request: aioweb.Request) -> aioweb.StreamResponse:
    """30 MB of HTML, chunked (no Content-Length), until the reader hangs up."""
    response = aioweb.StreamResponse(headers={"Content-Type": "text/html"})
    await response.prepare(request)
    block = b"<p>" + b"filler " * 9000 + b"</p>"
    try:
        for _ in range(30_000_000 // len(block)):
            await response.write(block)
    except ConnectionError:
        pass
    return response


class Script:
    def __init__(self, web_url: str) -> None:
        self.web = web_url

    async def __call__(self, body: dict[str, Any]) -> Scripted:
        first = body["messages"][0]["content"]
        text = str(first[0]["text"] if isinstance(first, list) else first)
        turns = sum(
            1
            for message in body["messages"]
            if isinstance(message["content"], list)
            and any(block.get("type") == "tool_result" for block in message["content"])
        )
        if not body.get("tools") or body.get("tool_choice", {}).get("type") == "none":
            return reply_text(REPORT, delay_s=DELAY_S)
        found = TOPIC.search(text)
        kind, n = (found.group(1), int(found.group(2))) if found else ("Company", 0)
        if kind == "Hostile":
            if turns == 0:
                path = "/bomb" if n % 2 == 0 else "/huge"
                return reply_tools([("read_page", {"url": self.web + path})], delay_s=DELAY_S)
        elif turns == 0:
            return reply_tools([("web_search", {"query": f"acme {n}"})], delay_s=DELAY_S)
        elif turns in (1, 2):
            picks = [(3 * n + turns * 7 + j) % PAGES for j in range(3 - turns)]
            calls = [("read_page", {"url": f"{self.web}/page/{k}"}) for k in picks]
            return reply_tools(calls, delay_s=DELAY_S)
        return reply_text(REPORT, delay_s=DELAY_S)


def serve_world(conn: Connection) -> None:
    asyncio.run(_serve(conn))


async def _serve(conn: Connection) -> None:
    async with (
        FakeWeb() as web,
        FakeAnthropic(min_cache_tokens=0) as api,
        FakeTavily(api_key="tvly-test", result_base=web.url) as tavily,
    ):
        for k, html in enumerate(pages()):
            web.page(f"/page/{k}", html)
        web.page("/bomb", gzip_bomb(), headers={"Content-Encoding": "gzip"})
        web.route("/huge", huge)
        api.responder = Script(web.url)
        conn.send({"api": api.url, "tavily": tavily.url, "web_host": web.host_port})
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)
