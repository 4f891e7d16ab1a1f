"""The report: its model, citation checking against what the run retrieved, and Markdown rendering."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Source(BaseModel):
    """A page the run actually retrieved: a search result or a page it read."""

    url: str
    title: str = ""
    snippet: str = ""
