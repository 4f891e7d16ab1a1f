"""A local fake of GitHub's REST API for tests: repository search and READMEs.

    async with FakeGitHub() as github:                   # GITHUB_API_URL=github.url
        github.repos = [repo("acme/grasp", "Grasping in Python", stars=120)]
        github.readmes["acme/grasp"] = "# Grasp\\n..."
        github.requests[0].headers.get("Authorization")

`GET /search/repositories?q=&per_page=` answers the repositories whose name or description
contains any word of `q` (qualifiers such as `language:x` are ignored), best first as listed;
`GET /repos/{owner}/{name}/readme` answers `readmes[...]` base64-encoded like GitHub, or 404.
Failures: see tests/fakes/api_server.py.
"""

from __future__ import annotations

import base64
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler

from tests.fakes.api_server import FakeApi


def repo(
    full_name: str,
    description: str = "",
    *,
    stars: int = 10,
    language: str | None = "Python",
    licence: str | None = "MIT",
    topics: list[str] | None = None,
) -> dict[str, Any]:
    """One repository as the search API returns it (the fields the bot reads, and a few more)."""
    return {
        "id": abs(hash(full_name)) % 10**8,
        "name": full_name.split("/")[1],
        "full_name": full_name,
        "html_url": f"https://github.com/{full_name}",
        "description": description or None,
        "fork": False,
        "stargazers_count": stars,
        "watchers_count": stars,
        "language": language,
        "pushed_at": "2024-05-01T12:00:00Z",
        "archived": False,
        "license": {"key": licence.lower(), "spdx_id": licence} if licence else None,
        "topics": topics or [],
        "score": 1.0,
    }


class FakeGitHub(FakeApi):
    def __init__(self) -> None:
        super().__init__()
        self.repos: list[dict[str, Any]] = []
        self.readmes: dict[str, str] = {}

    def routes(self) -> dict[str, Handler]:
        return {
            "/search/repositories": self._search,
            "/repos/{owner}/{name}/readme": self._readme,
        }

    async def _search(self, request: web.Request) -> web.Response:
        words = [w.lower() for w in request.query.get("q", "").split() if ":" not in w]
        found = [
            r
            for r in self.repos
            if any(w in f"{r['full_name']} {r['description'] or ''}".lower() for w in words)
        ]
        per_page = int(request.query.get("per_page", "30"))
        return web.json_response(
            {"total_count": len(found), "incomplete_results": False, "items": found[:per_page]}
        )

    async def _readme(self, request: web.Request) -> web.Response:
        full_name = f"{request.match_info['owner']}/{request.match_info['name']}"
        text = self.readmes.get(full_name)
        if text is None:
            return web.json_response({"message": "Not Found"}, status=404)
        encoded = base64.encodebytes(text.encode()).decode()  # GitHub wraps at 60 characters
        return web.json_response(
            {
                "type": "file",
                "encoding": "base64",
                "size": len(text.encode()),
                "name": "README.md",
                "path": "README.md",
                "content": encoded,
                "html_url": f"https://github.com/{full_name}/blob/main/README.md",
                "download_url": f"https://raw.githubusercontent.com/{full_name}/main/README.md",
            }
        )
