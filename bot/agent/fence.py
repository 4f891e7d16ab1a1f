"""The one construction for untrusted text on its way to a model: the web-content fence."""

from __future__ import annotations

import re

OPEN = "<web_content>"
CLOSE = "</web_content>"
# Any spelling a model might read as our tag: either case, spaces inside, an opener or a closer.
_TAG = re.compile(r"<(\s*/?\s*web_content)", re.IGNORECASE)


def fence(body: str) -> str:
    """Web text goes to a model only inside these tags. A tag inside `body` is defused (`&lt;`), so
    a page can neither close the fence early nor open another one; fencing fenced text is safe."""
    defused = _TAG.sub(r"&lt;\1", body)
    return f"{OPEN}\n{defused}\n{CLOSE}"


def plain(content: str) -> str:
    """Fenced content as one line for a person: our tags dropped, whitespace collapsed."""
    return " ".join(line for line in content.splitlines() if line not in (OPEN, CLOSE)).strip()


def fence_each(pieces: list[str], limit: int) -> str:
    """Each piece in its own fence (a fence inside a piece is defused, never nested open), as
    many as fit in `limit` characters; the piece that does not fit is cut before it is fenced."""
    out: list[str] = []
    room = limit
    for piece in pieces:
        if room <= 0:
            break
        out.append(fence(piece[:room]))
        room -= len(piece) + 2
    return "\n\n".join(out)
