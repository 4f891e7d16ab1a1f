"""The layout keeps itself: imports run one way (cli → adapters → runs → store → agent →
config/domain/errors), no module imports itself round a circle, a chat platform never imports
the other, and no module of `bot/` grows past what a person reads at once."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BOT = Path(__file__).resolve().parent.parent / "bot"
MAX_LINES = 350

LAYERS = [
    ("bot.cli", 7),
    ("bot.__main__", 7),
    ("bot.adapters", 6),
    ("bot.compose", 5),
    ("bot.providers", 4),
    ("bot.runs", 4),
    ("bot.store", 3),
    ("bot.export", 3),
    ("bot.agent", 2),
    ("bot.memory", 1),
    ("bot.config", 1),
    ("bot.domain", 1),
    ("bot.errors", 1),
    ("bot", 1),
]
"""Longest prefix first: a module may import only its own layer or lower ones."""

APART = [
    ("bot.adapters.slack", "bot.adapters.discord"),
    ("bot.adapters.discord", "bot.adapters.slack"),
    ("bot.adapters.chat", "bot.adapters.slack"),
    ("bot.adapters.chat", "bot.adapters.discord"),
    ("bot.agent.deep", "bot.agent.followup"),
    ("bot.agent.followup", "bot.agent.deep"),
    ("bot.agent.web", "bot.agent.deep"),
    ("bot.agent.web", "bot.agent.followup"),
    ("bot.agent.models", "bot.agent.web"),
    ("bot.store", "bot.export"),
    ("bot.export", "bot.store"),
]
"""(importer, imported) package pairs that must not meet, whatever their layers."""


def _name(path: Path) -> str:
    parts = path.relative_to(BOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(path): path for path in BOT.rglob("*.py")}


def _imports(name: str) -> set[str]:
    """Every bot module `name` imports, at any depth of its code (lazy and TYPE_CHECKING
    imports included: a circle drawn only for the type checker is still a circle)."""
    found: set[str] = set()
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    [*package.split(".")[: len(package.split(".")) - node.level + 1], base]
                ).strip(".")
            for alias in node.names:
                child = f"{base}.{alias.name}"
                found.add(child if child in MODULES else base)
    return {module for module in found if module in MODULES and module != name}


GRAPH = {name: _imports(name) for name in MODULES}


def _layer(name: str) -> int:
    return next(rank for prefix, rank in LAYERS if name == prefix or name.startswith(prefix + "."))


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_the_walk_sees_the_whole_package() -> None:
    assert "bot.agent.loop" in MODULES
    assert "bot.store.runs" in GRAPH["bot.runs.manager"]
    assert "bot.agent.report.facts" in GRAPH["bot.agent.report.claims"]


def test_imports_run_one_way() -> None:
    upward = sorted(
        f"{name} imports {target}"
        for name, targets in GRAPH.items()
        for target in targets
        if _layer(target) > _layer(name)
    )
    assert upward == []


@pytest.mark.parametrize(("importer", "imported"), APART)
def test_packages_that_must_not_meet(importer: str, imported: str) -> None:
    crossing = sorted(
        f"{name} imports {target}"
        for name, targets in GRAPH.items()
        if _within(name, importer)
        for target in targets
        if _within(target, imported)
    )
    assert crossing == []


def test_no_module_imports_itself_round_a_circle() -> None:
    circles = [sorted(group) for group in _strongly_connected(GRAPH) if len(group) > 1]
    assert circles == []


def test_no_module_is_longer_than_a_person_reads_at_once() -> None:
    long = {
        name: lines
        for name, path in MODULES.items()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_a_circle_is_found_when_there_is_one() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert [sorted(g) for g in _strongly_connected(graph) if len(g) > 1] == [["a", "b", "c"]]


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iteratively (the graph is a few hundred modules deep at most)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    groups: list[set[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                groups.append(group)
    return groups
