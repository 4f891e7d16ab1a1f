"""A deep run's fallback (seed 004): when the final write-up fails, its findings become the
report, without the model.

Each finding is one section under its sub-question. Researchers often write a finding as if it
were a whole report; what only a whole report has is taken out of it, so that the result reads
as one report: its title repeating the sub-question goes, its headings sit one level down, and
its own sources list goes (the report lists every source once, with the run's numbers).
"""

from __future__ import annotations

import re

from markdown_it.token import Token

from bot.agent.deep.findings import report_from
from bot.agent.deep.schema import Finding
from bot.agent.language import frame
from bot.agent.report.citations import Part, is_sources_section
from bot.agent.report.markdown import inline_tokens, parse, render, text_of
from bot.agent.report.model import Report, SourceRegistry
from bot.domain import Request

Block = list[Token]
# Citation groups opening a line (`[3]`, `[1, 4]`, `[2-3]`) and what follows them.
_LEADING_CITATIONS = re.compile(r"^((?:\[\d+(?:\s*[-–—,;]\s*\d+)*\]\s*)+)(.*)$")
_NO_HEADING = Token("inline", "", 0, children=[])
"""The heading a run of blocks is judged under when it has none: only its shape counts."""


def findings_report(
    request: Request, findings: list[Finding], registry: SourceRegistry, why: str
) -> Report:
    """The report from the findings: `why` (what failed) is its TL;DR, each finding a section,
    its citations checked and renumbered like any report's, every source listed once."""
    words = frame(request.language)
    lines = [f"# {words.research_title.format(topic=request.topic)}", "", f"## {words.tldr}", ""]
    lines += [why, ""]
    for finding in findings:
        lines += [f"## {_one_line(finding.topic)}", "", finding_body(finding), ""]
    report = report_from("\n".join(lines), registry, request)
    return report.model_copy(update={"from_evidence_only": True})


def finding_body(finding: Finding) -> str:
    """A finding as the body of its section: its summary, then its key findings as a list."""
    summary = _as_part_of_a_report(finding.summary, finding.topic)
    points = [f"- {_citations_after(_one_line(point))}" for point in finding.key_findings]
    return "\n\n".join(piece for piece in (summary, "\n".join(points)) if piece)


def _as_part_of_a_report(text: str, topic: str) -> str:
    kept: list[Block] = []
    for heading, body in _parts(_blocks(parse(text))):
        if heading is not None and is_sources_section(Part(heading[1], 2, _joined(body))):
            continue  # its own sources list, under a heading
        if heading is not None and not _same(text_of(heading[1].children or []), topic):
            kept.append(_one_level_down(heading))
        kept += _without_sources_list(body)
    return render(_joined(kept))


def _blocks(tokens: list[Token]) -> list[Block]:
    """The top-level blocks of a parsed document (a heading, a paragraph, a whole list …)."""
    blocks: list[Block] = []
    for token in tokens:
        if token.level == 0 and token.nesting >= 0:
            blocks.append([])
        blocks[-1].append(token)
    return blocks


def _parts(blocks: list[Block]) -> list[tuple[Block | None, list[Block]]]:
    """The blocks under each heading; the first part's heading is None."""
    parts: list[tuple[Block | None, list[Block]]] = [(None, [])]
    for block in blocks:
        if block[0].type == "heading_open":
            parts.append((block, []))
        else:
            parts[-1][1].append(block)
    return parts


def _without_sources_list(body: list[Block]) -> list[Block]:
    """`body` without a sources list at its end (two or more entries, with its label if it has
    one, `Sources:`): a single line that starts with a citation is prose, and stays."""
    end = len(body)
    while end and is_sources_section(Part(_NO_HEADING, 2, body[end - 1])):
        end -= 1
    if _entries(body[end:]) < 2:
        return body
    if end and _is_label(body[end - 1]):
        end -= 1
    return body[:end]


def _entries(blocks: list[Block]) -> int:
    inline = [t for block in blocks for t in inline_tokens(block)]
    breaks = sum(c.type in {"softbreak", "hardbreak"} for t in inline for c in t.children or [])
    return len(inline) + breaks


def _is_label(block: Block) -> bool:
    """A short paragraph that announces what follows: `Sources:`, `**References**`."""
    if block[0].type != "paragraph_open":
        return False
    children = [c for t in inline_tokens(block) for c in t.children or []]
    words = text_of(children).strip()
    bold = [c.type for c in children] == ["strong_open", "text", "strong_close"]
    return len(words.split()) <= 3 and (words.endswith(":") or bold)


def _one_level_down(heading: Block) -> Block:
    """A heading inside a section: `###` or deeper, never cutting the report into new sections."""
    level = min(max(int(heading[0].tag[1]) + 1, 3), 6)
    for token in (heading[0], heading[-1]):
        token.tag, token.markup = f"h{level}", "#" * level
    return heading


def _same(heading: str, topic: str) -> bool:
    def plain(text: str) -> str:
        return " ".join(text.casefold().strip(" #*?.:").split())

    return plain(heading) == plain(topic)


def _joined(blocks: list[Block]) -> list[Token]:
    return [token for block in blocks for token in block]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _citations_after(point: str) -> str:
    """`[3] Acme raised $40M.` reads `Acme raised $40M [3].`: a line that opens with citations
    reads like an entry of a sources list, to people and to the report's own checks."""
    match = _LEADING_CITATIONS.match(point)
    if match is None or not match.group(2):
        return point
    cited, rest = match.group(1).strip(), match.group(2).rstrip()
    if rest[-1] in ".!?":
        return f"{rest[:-1]} {cited}{rest[-1]}"
    return f"{rest} {cited}"
