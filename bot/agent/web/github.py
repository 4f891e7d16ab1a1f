"""GitHub: the `github_search` tool (repositories) and `read_github_readme`, through GitHub's REST
API with an optional token. Repositories become sources (their GitHub page); reading a README
marks that source as read."""

from __future__ import annotations

import base64
import binascii
import logging
import re
from collections.abc import Awaitable
from typing import Any, TypeVar
from urllib.parse import quote

from pydantic import BaseModel, Field, field_validator

from bot.agent.report.model import Source
from bot.agent.urls import is_web
from bot.agent.web.api import ApiClient, ApiError
from bot.agent.web.listing import SNIPPET_CHARS, clip, entry, heading
from bot.agent.web.registry import Tool, ToolContext, ToolOutput

log = logging.getLogger(__name__)
T = TypeVar("T")

GITHUB_URL = "https://api.github.com"
README_CHARS = 40_000
"""A README longer than this is cut, with a visible marker (as the page reader cuts pages)."""
_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}")
_WEB_PREFIX = re.compile(r"^https?://(www\.)?github\.com/", re.IGNORECASE)
REFINE = (
    "Try fewer words, the project's or organisation's name, or qualifiers such as "
    "`language:python`, `topic:robotics` or `stars:>100`."
)


class _License(BaseModel):
    spdx_id: str | None = None


class Repo(BaseModel):
    full_name: str
    html_url: str
    description: str | None = None
    stargazers_count: int = 0
    language: str | None = None
    pushed_at: str | None = None
    archived: bool = False
    license: _License | None = None
    topics: list[str] = Field(default_factory=list)

    def facts(self) -> str:
        licence = self.license.spdx_id if self.license and self.license.spdx_id else ""
        parts = [
            f"★ {self.stargazers_count:,}",
            self.language or "",
            "" if licence == "NOASSERTION" else licence,
            f"last push {self.pushed_at[:10]}" if self.pushed_at else "",
            "archived" if self.archived else "",
        ]
        return " · ".join(part for part in parts if part)

    def source(self) -> Source:
        about = " — ".join(part for part in (self.facts(), self.description or "") if part)
        return Source(url=self.html_url, title=self.full_name, snippet=clip(about, SNIPPET_CHARS))


class _Search(BaseModel):
    items: list[Repo] = Field(default_factory=list)


class _ReadmeFile(BaseModel):
    html_url: str
    content: str = ""
    encoding: str = "base64"

    def decoded(self) -> str:
        raw = base64.b64decode(self.content) if self.encoding == "base64" else self.content.encode()
        return raw.decode("utf-8", "replace").strip()


class Readme(BaseModel):
    repo_url: str
    """The repository's page: the source a README read is filed under."""
    html_url: str
    text: str


class GitHub:
    """GitHub's REST API; one per process, closed at the end. Without a token GitHub allows 10
    searches a minute and 60 other calls an hour per address; with one, 30 searches a minute and
    5,000 calls an hour."""

    def __init__(
        self, base_url: str | None = None, token: str | None = None, *, timeout_s: float = 15.0
    ) -> None:
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._api = ApiClient(
            "GitHub", base_url or GITHUB_URL, timeout_s=timeout_s, headers=headers
        )
        self._anonymous = not token
        self._told_about_token = False

    async def search(self, query: str, max_results: int) -> list[Repo]:
        params = {"q": query, "per_page": max_results}
        answer = await self._call(self._api.get_model("search/repositories", _Search, params))
        return answer.items[:max_results]

    async def readme(self, repo: str) -> Readme:
        owner, name = (quote(part, safe="") for part in repo.split("/"))
        try:
            found = await self._call(
                self._api.get_model(f"repos/{owner}/{name}/readme", _ReadmeFile)
            )
        except ApiError as error:
            if error.status == 404:
                raise ApiError(
                    f"GitHub has no README for {repo}, or no such public repository"
                ) from error
            raise
        try:
            text = found.decoded()
        except (binascii.Error, ValueError) as error:
            raise ApiError(f"GitHub sent the README of {repo} in a form we cannot read") from error
        if len(text) > README_CHARS:
            text = (
                text[:README_CHARS]
                + f"\n\n[… README cut here: it is longer than {README_CHARS:,} characters]"
            )
        repo_url = found.html_url.split("/blob/", 1)[0]
        return Readme(
            repo_url=repo_url if is_web(repo_url) else found.html_url,
            html_url=found.html_url,
            text=text,
        )

    async def _call(self, call: Awaitable[T]) -> T:
        try:
            return await call
        except ApiError as error:
            if error.status in (403, 429) and self._anonymous and not self._told_about_token:
                self._told_about_token = True
                log.warning(
                    "GitHub refused a call (HTTP %s): set GITHUB_TOKEN for higher rate limits",
                    error.status,
                )
            raise

    async def aclose(self) -> None:
        await self._api.aclose()


class GitHubSearchArgs(BaseModel):
    query: str = Field(
        min_length=2,
        max_length=256,
        description="GitHub repository search: words, with qualifiers if useful "
        "(`language:rust`, `topic:slam`, `org:acme`, `stars:>50`).",
    )
    max_results: int = Field(default=5, ge=1, le=10)


class ReadmeArgs(BaseModel):
    repo: str = Field(
        description="The repository as `owner/name` (e.g. `psf/requests`) or its GitHub URL."
    )

    @field_validator("repo")
    @classmethod
    def _owner_name(cls, value: str) -> str:
        value = _WEB_PREFIX.sub("", value.strip()).removesuffix(".git")
        repo = "/".join(value.split("/")[:2])
        if not _REPO.fullmatch(repo) or repo.split("/")[1] in (".", ".."):
            raise ValueError("expected a GitHub repository as owner/name")
        return repo


def github_tools(github: GitHub, *, timeout_s: float) -> list[Tool[Any]]:
    """`github_search` and `read_github_readme`."""

    async def github_search(ctx: ToolContext, args: GitHubSearchArgs) -> ToolOutput:
        """Search GitHub for repositories (code, libraries, tools, datasets, a company's open
        source). Returns numbered repositories with stars, language, licence and description;
        cite them as [n]. Read one's README with read_github_readme."""
        repos = await github.search(args.query, args.max_results)
        sources = [repo.source() for repo in repos]
        lines = [
            entry(
                ctx.registry.add(source),
                repo.full_name,
                repo.html_url,
                repo.facts(),
                repo.description or "",
                f"topics: {', '.join(repo.topics)}" if repo.topics else "",
            )
            for repo, source in zip(repos, sources, strict=True)
        ]
        return ToolOutput(
            heading=heading("repositories on GitHub", args.query, sources, REFINE),
            body="\n\n".join(lines),
            sources=sources,
        )

    async def read_github_readme(ctx: ToolContext, args: ReadmeArgs) -> ToolOutput:
        """Read a GitHub repository's README (through GitHub's API). Cite it with the number in
        the heading: the repository's number when github_search listed it."""
        readme = await github.readme(args.repo)
        source = Source(url=readme.repo_url, title=args.repo, snippet=readme.text[:300], read=True)
        number = ctx.registry.add(source)
        ctx.registry.alias(readme.html_url, number)
        return ToolOutput(
            heading=f"[{number}] The README of {args.repo}, its address and text:",
            body=f"{readme.html_url}\n\n{readme.text}",
            sources=[source],
        )

    return [
        Tool("github_search", GitHubSearchArgs, github_search, timeout_s),
        Tool("read_github_readme", ReadmeArgs, read_github_readme, timeout_s),
    ]
