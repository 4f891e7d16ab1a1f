"""What the fake Discord checks in a message's components, as the real API does: legacy action
rows, or Components V2 (flag `IS_COMPONENTS_V2`, 1 << 15) with its limits: 40 components in all
(nested ones and section accessories included), 4,000 characters of text display content, no
`content` or embeds beside them, and `attachment://` files that the message really carries.

`problems(body, files)` lists what Discord would refuse; the fake answers those with 400
`{"code": 50035, "message": "Invalid Form Body", "errors": …}`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

Json = Any
IS_COMPONENTS_V2 = 1 << 15
MAX_COMPONENTS = 40
MAX_TEXT = 4000
ACTION_ROW, BUTTON, STRING_SELECT = 1, 2, 3
SECTION, TEXT_DISPLAY, THUMBNAIL, MEDIA_GALLERY, FILE, SEPARATOR, CONTAINER = (
    9,
    10,
    11,
    12,
    13,
    14,
    17,
)
V2_TOP = {ACTION_ROW, SECTION, TEXT_DISPLAY, MEDIA_GALLERY, FILE, SEPARATOR, CONTAINER}
IN_CONTAINER = {ACTION_ROW, SECTION, TEXT_DISPLAY, MEDIA_GALLERY, FILE, SEPARATOR}
LINK_STYLE = 5


def walk(components: list[Json]) -> Iterator[Json]:
    """Every component, nested ones and section accessories included, in order."""
    for component in components:
        yield component
        yield from walk(component.get("components") or [])
        if "accessory" in component:
            yield component["accessory"]


def invalid_form_body(problems: list[str]) -> Json:
    return {
        "code": 50035,
        "message": "Invalid Form Body",
        "errors": {
            "components": {
                "_errors": [{"code": "COMPONENT_INVALID", "message": p} for p in problems]
            }
        },
    }


def problems(body: Json, files: dict[str, bytes]) -> list[str]:
    """What Discord would refuse in a message body (a post, or an edit merged over the stored
    message); empty when it is fine."""
    components = body.get("components") or []
    if not int(body.get("flags") or 0) & IS_COMPONENTS_V2:
        return [
            f"component type {c.get('type')} needs IS_COMPONENTS_V2"
            for c in components
            if c.get("type") != ACTION_ROW
        ] + _rows(components)
    found: list[str] = []
    if body.get("content"):
        found.append("content cannot be used with IS_COMPONENTS_V2")
    if body.get("embeds"):
        found.append("embeds cannot be used with IS_COMPONENTS_V2")
    everything = list(walk(components))
    if len(everything) > MAX_COMPONENTS:
        found.append(f"{len(everything)} components: at most {MAX_COMPONENTS}")
    text = sum(len(c.get("content") or "") for c in everything if c.get("type") == TEXT_DISPLAY)
    if text > MAX_TEXT:
        found.append(f"{text} characters of text displays: at most {MAX_TEXT}")
    found += [
        f"type {c.get('type')} cannot be at the top"
        for c in components
        if c.get("type") not in V2_TOP
    ]
    for component in everything:
        found += _component(component)
    found += _rows([c for c in everything if c.get("type") == ACTION_ROW])
    found += _files(everything, body, files)
    ids = [c["custom_id"] for c in everything if "custom_id" in c]
    if len(ids) != len(set(ids)):
        found.append("custom ids must be unique in a message")
    return found


def _component(component: Json) -> list[str]:
    kind = component.get("type")
    if kind == CONTAINER:
        inside = {c.get("type") for c in component.get("components") or []}
        return [f"type {k} cannot be in a container" for k in inside - IN_CONTAINER]
    if kind == SECTION:
        texts = component.get("components") or []
        accessory = component.get("accessory") or {}
        found = [] if 1 <= len(texts) <= 3 else ["a section holds 1 to 3 text displays"]
        if any(c.get("type") != TEXT_DISPLAY for c in texts):
            found.append("a section holds text displays only")
        if accessory.get("type") not in (BUTTON, THUMBNAIL):
            found.append("a section needs a button or thumbnail accessory")
        return found
    if kind == BUTTON:
        found = []
        if len(component.get("label") or "") > 80:
            found.append("a button label is at most 80 characters")
        if (
            component.get("style") != LINK_STYLE
            and not 1 <= len(component.get("custom_id") or "") <= 100
        ):
            found.append("a button needs a custom id of 1 to 100 characters")
        return found
    return []


def _rows(components: list[Json]) -> list[str]:
    found = []
    for row in components:
        kinds = [c.get("type") for c in row.get("components") or []]
        if not kinds or (STRING_SELECT in kinds and len(kinds) != 1) or len(kinds) > 5:
            found.append("an action row holds 1 to 5 buttons or one select")
    return found


def _files(everything: list[Json], body: Json, files: dict[str, bytes]) -> list[str]:
    carried = set(files) | {a.get("filename") for a in body.get("attachments") or []}
    found = []
    for component in everything:
        if component.get("type") != FILE:
            continue
        url = str((component.get("file") or {}).get("url", ""))
        if not url.startswith("attachment://"):
            found.append("a file component takes attachment:// references only")
        elif url.removeprefix("attachment://") not in carried:
            found.append(f"{url} is not an attachment of this message")
    return found
