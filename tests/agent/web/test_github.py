"""github_search and read_github_readme against the local fake GitHub API."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from bot.agent.report.model import SourceRegistry
from bot.agent.web.github import GitHub, github_tools
from bot.agent.web.registry import Toolbox, ToolContext
from tests.fakes.github_api import FakeGitHub, repo

README = "# Grasp\n\nA Python library for tactile grasping. Used on 37 warehouse robots.\n"


@pytest.fixture
async def fake() -> AsyncIterator[FakeGitHub]:
    async with FakeGitHub() as server:
        server.repos = [
            repo("acme/grasp", "Tactile grasping for robot arms", stars=1234, topics=["robotics"]),
            repo("acme/fleet", "Fleet manager for warehouse robots", language=None, licence=None),
        ]
        server.readmes["acme/grasp"] = README
        yield server


async def tools(fake: FakeGitHub, token: str | None = None) -> tuple[Toolbox, GitHub]:
    github = GitHub(fake.url, token, timeout_s=5)
    return Toolbox(github_tools(github, timeout_s=5)), github


@pytest.fixture
async def toolbox(fake: FakeGitHub) -> AsyncIterator[Toolbox]:
    box, github = await tools(fake)
    yield box
    await github.aclose()


async def test_repositories_become_numbered_sources(fake: FakeGitHub, toolbox: Toolbox) -> None:
    registry = SourceRegistry()

    result = await toolbox.call(
        ToolContext(registry), "github_search", {"query": "robot language:python"}
    )

    assert not result.is_error
    assert result.output.heading == "Repositories on GitHub for 'robot language:python':"
    assert [s.url for s in registry.sources] == [
        "https://github.com/acme/grasp",
        "https://github.com/acme/fleet",
    ]
    assert registry.sources[0].title == "acme/grasp"
    assert "Tactile grasping for robot arms" in registry.sources[0].snippet
    assert not registry.sources[0].read
    assert result.output.body.startswith(
        "[1] acme/grasp\nhttps://github.com/acme/grasp\n"
        "★ 1,234 · Python · MIT · last push 2024-05-01\n"
        "Tactile grasping for robot arms\ntopics: robotics"
    )
    [request] = fake.requests
    assert request.query == {"q": "robot language:python", "per_page": "5"}
    assert request.headers["Accept"] == "application/vnd.github+json"
    assert "Authorization" not in request.headers  # no token configured


async def test_the_token_is_sent_when_configured(fake: FakeGitHub) -> None:
    box, github = await tools(fake, token="ghp_test")
    try:
        await box.call(ToolContext(SourceRegistry()), "github_search", {"query": "grasp"})
    finally:
        await github.aclose()

    assert fake.requests[0].headers["Authorization"] == "Bearer ghp_test"


async def test_one_repository_is_sparse_and_says_how_to_refine(
    fake: FakeGitHub, toolbox: Toolbox
) -> None:
    result = await toolbox.call(ToolContext(SourceRegistry()), "github_search", {"query": "fleet"})

    assert result.output.heading.startswith("Only 1 useful result for 'fleet'. Try fewer words")


async def test_reading_a_readme_marks_the_listed_repository_as_read(
    fake: FakeGitHub, toolbox: Toolbox
) -> None:
    registry = SourceRegistry()
    ctx = ToolContext(registry)
    await toolbox.call(ctx, "github_search", {"query": "tactile"})

    result = await toolbox.call(
        ctx, "read_github_readme", {"repo": "https://github.com/acme/grasp"}
    )

    assert not result.is_error
    assert result.output.heading == "[1] The README of acme/grasp, its address and text:"
    assert (
        result.output.body
        == f"https://github.com/acme/grasp/blob/main/README.md\n\n{README.strip()}"
    )
    assert len(registry.sources) == 1 and registry.sources[0].read
    assert registry.number("https://github.com/acme/grasp/blob/main/README.md") == 1
    assert fake.requests[-1].path == "/repos/acme/grasp/readme"


async def test_a_missing_readme_is_an_error_result(toolbox: Toolbox) -> None:
    result = await toolbox.call(
        ToolContext(SourceRegistry()), "read_github_readme", {"repo": "acme/fleet"}
    )

    assert result.is_error
    assert "GitHub has no README for acme/fleet" in result.output.body


@pytest.mark.parametrize(
    "repo_name", ["acme", "acme/..", "../etc/passwd", "acme/grasp?x=1", "https://evil.example/a/b"]
)
async def test_anything_but_owner_and_name_is_refused_before_a_call(
    fake: FakeGitHub, toolbox: Toolbox, repo_name: str
) -> None:
    result = await toolbox.call(
        ToolContext(SourceRegistry()), "read_github_readme", {"repo": repo_name}
    )

    assert result.is_error and result.output.heading.startswith(
        "Invalid input for read_github_readme"
    )
    assert fake.requests == []


async def test_a_rate_limit_is_an_error_result_and_logged_once(
    fake: FakeGitHub, toolbox: Toolbox, caplog: pytest.LogCaptureFixture
) -> None:
    fake.fail_next(403, n=2, headers={"x-ratelimit-remaining": "0"})
    ctx = ToolContext(SourceRegistry())

    with caplog.at_level(logging.WARNING, logger="bot.agent.web.github"):
        first = await toolbox.call(ctx, "github_search", {"query": "grasp"})
        second = await toolbox.call(ctx, "read_github_readme", {"repo": "acme/grasp"})

    assert first.is_error and second.is_error
    assert "GitHub answered HTTP 403 (forbidden, or a rate limit was reached)" in first.output.body
    assert [r.message for r in caplog.records].count(
        "GitHub refused a call (HTTP 403): set GITHUB_TOKEN for higher rate limits"
    ) == 1


async def test_an_unexpected_answer_is_an_error_result(fake: FakeGitHub, toolbox: Toolbox) -> None:
    fake.answer_next('{"items": [{"full_name": 7}]}')

    result = await toolbox.call(ToolContext(SourceRegistry()), "github_search", {"query": "grasp"})

    assert result.is_error and "GitHub answered with something unexpected" in result.output.body
