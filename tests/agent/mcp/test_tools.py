"""What the model sees of an MCP tool: its name, and a schema the providers take (or why not),
and how a thread or terminal line names a call of it."""

from __future__ import annotations

from bot.adapters.chat.calls import describe_call
from bot.agent.events import ToolCalled
from bot.agent.mcp.names import split_name, tool_name
from bot.agent.mcp.tools import usable_schema


def test_a_tool_is_named_as_claude_code_names_it_in_characters_every_provider_takes() -> None:
    assert tool_name("crm", "lookup_company") == "mcp__crm__lookup_company"
    assert tool_name("wiki", "pages.search v2") == "mcp__wiki__pages_search_v2"
    assert len(tool_name("crm", "x" * 100)) == 64
    assert split_name("mcp__crm__lookup_company") == ("crm", "lookup_company")
    assert split_name("web_search") is None and split_name("mcp__crm") is None


def test_a_schema_is_taken_simplified_or_refused_with_a_reason() -> None:
    plain = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}
    assert usable_schema(plain) == {"type": "object", "properties": {}}
    untyped = {"properties": {"q": {"type": "string"}}}
    assert usable_schema(untyped) == {"type": "object", "properties": {"q": {"type": "string"}}}
    assert "anyOf" in str(usable_schema({"anyOf": [{"type": "object"}]}))
    assert "'string'" in str(usable_schema({"type": "string"}))
    huge = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(2_000)}}
    assert "over 16,000 characters" in str(usable_schema(huge))


def test_a_thread_says_which_private_source_a_run_asked() -> None:
    call = ToolCalled(turn=1, call_id="t1", name="mcp__crm__lookup_company", input={"name": "A"})
    assert describe_call(call) == "Asked crm · lookup_company (private source)"
