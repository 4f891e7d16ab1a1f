"""The one construction for untrusted text on its way to a model: the web-content fence."""

from __future__ import annotations

import re
import unicodedata

OPEN = "<web_content>"
CLOSE = "</web_content>"
# Any spelling a model might read as our tag: either case, spaces inside, an opener or a closer.
_TAG = re.compile(r"<(\s*/?\s*web_content)", re.IGNORECASE)
# Unicode tag characters (U+E0020-E007E) mirror ASCII invisibly, and zero-width characters hide
# inside a word: a person sees nothing there, a model may still read `</web_content>`.
_HIDDEN = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff\U000e0000-\U000e007f]")


def _unhide(match: re.Match[str]) -> str:
    code = ord(match.group())
    return chr(code - 0xE0000) if 0xE0020 <= code <= 0xE007E else ""


def _as_a_model_may_read(text: str) -> str:
    """Look-alikes folded to the plain characters they resemble: compatibility forms (full-width,
    small forms, mathematical letters) by NFKC, tag characters to their ASCII, invisibles out."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", _HIDDEN.sub(_unhide, text))


def fence(body: str) -> str:
    """Web text goes to a model only inside these tags. A tag inside `body` is defused (`&lt;`), so
    a page can neither close the fence early nor open another one; fencing fenced text is safe.
    Text with a look-alike tag (`＜/web_content＞`) is fenced folded, as a model may read it, so
    that tag is defused too; other text is left exactly as it was written."""
    folded = _as_a_model_may_read(body)
    if len(_TAG.findall(folded)) > len(_TAG.findall(body)):
        body = folded
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
