"""Whether a source passage says what a sentence says, word for word in all that matters.

The sentence's content words must appear in the passage in the same order with no other
content word among them; the words that say who does what to whom (`by`, `from`, `than`) must
be the same among them; and the words that turn a statement around must agree both ways:
negations (`not`, `never`, `no`), quantifiers (`all`, `some`, `only`, `most`), hedges (`may`,
`suggests`, `planned`, `former`), contrast (`unlike`, `different`, `instead`), falsity
(`debunked`, `wrongly`) and near misses (`almost`, `nominated`). Names alone never match a
sentence: it needs a word that is not a name. Other function words and light plural endings
are ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


def words(text: str) -> frozenset[str]:
    return frozenset(text.split())


FUNCTION_WORDS = words(
    """a an the of in on at to for from with by as into onto about than that which who whom
    whose this these those it its it's they them their there here he him his she her we our you
    your i me my is are was were be been being am has have had having do does did done and or
    but so also then thus very such per via upon within while whereas when where what how
    according said says say reported reports total approximately roughly around nearly almost
    some circa estimated an
    der die das den dem des ein eine einer einem einen und oder ist sind war waren wurde wurden
    hat haben im in am zum zur von vom mit für auf aus bei als wie zu es sie er
    le la les un une des du de et ou est sont était a ont au aux en dans par pour sur avec que qui
    el los las unos unas del y o es son fue era ha han al en por para con que
    il lo gli uno una di da e è sono era ha hanno nel nella per con che
    o os as um uma do da dos das e é são foi tem no na em por para com que
    и в во на с со по к о об из за от до что это как а"""
)
"""Lower-case words that carry no claim of their own, in the report languages."""

MARKERS = words(
    """not no never none nobody nothing nowhere neither nor without cannot yet lack lacks lacked
    lacking absent fail fails failed unable unlike
    all every each some most many few several only any both either always sometimes often
    usually rarely seldom majority minority mostly partly partially entire entirely whole sole
    solely more less fewer least
    may might could can would should will shall possibly possible likely unlikely probably
    perhaps maybe suggest suggests suggested suggesting reportedly allegedly alleged claim
    claims claimed expected expects plan plans planned propose proposes proposed potential
    potentially if whether unless rumored rumoured deny denies denied false falsely myth hoax
    hypothesis appear appears appeared seem seems seemed believed thought former formerly
    previously ex once
    almost nearly barely hardly instead rather whereas although though despite unlike
    different differ differs differed distinct dissimilar unrelated opposite contrary similar
    resemble resembles resembled versus
    incorrect incorrectly wrong wrongly mistaken mistakenly erroneous erroneously misleading
    misconception debunk debunked disprove disproved refute refuted dispute disputed unfounded
    unproven unconfirmed unverified supposedly purportedly purported rumor rumour conspiracy
    fake fictional fictitious nominated nominee candidate unsuccessful rejected cancelled
    canceled abandoned postponed
    nicht kein keine keinen keiner keinem keines nie niemals ohne alle einige manche meisten nur
    immer kann könnte soll sollen wird würde möglicherweise wahrscheinlich vielleicht angeblich
    geplant ehemalige ehemaliger falsch anders
    ne pas jamais aucun aucune sans non tous toutes tout quelques certains seulement uniquement
    toujours peut pourrait probablement prévu ancien ancienne faux fausse différent
    nunca ningún ninguna ninguno sin ni todos todas algunos algunas solo sólo siempre puede
    podría probablemente previsto antiguo falso falsa diferente
    mai nessun nessuno nessuna senza tutti tutte alcuni sempre potrebbe forse
    não nenhum nenhuma sem alguns apenas poderia talvez
    не нет никогда без ни все некоторые только всегда может вероятно возможно"""
)
"""Negations, quantifiers and hedges: a passage matches only when it has the same ones."""

NEGATIONS = words(
    """not no never none nobody nothing nowhere neither nor without cannot yet nicht kein keine
    keinen keiner keinem keines nie niemals ohne ne pas jamais aucun aucune sans non nunca ningún
    ninguna ninguno sin mai nessun nessuno nessuna senza não nenhum nenhuma sem не нет никогда
    без"""
)
"""Words that deny: a denied statement's numbers need not be in its source (`X did not happen
in 2014` is not refuted by a source that never names 2014)."""

ROLE_WORDS = words("by from to than against into onto von durch par por da")
"""Words that say who does what to whom: `A was bought by B` is not `A bought B`, although their
content words are the same and in the same order."""

_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_NOT = re.compile(r"(?i)^(\w+?)n['’]t$")


@dataclass(frozen=True)
class Token:
    word: str
    """Lower-cased, possessive and plural endings taken off."""
    start: int
    end: int
    kind: str
    """`content`, `marker` or `function`."""
    capital: bool = False
    """Written capitalised: a name, or the first word of a sentence."""


def tokens(text: str, skip: list[tuple[int, int]]) -> list[Token]:
    """The words of `text`, but for those inside the `skip` spans (its quantities)."""
    out: list[Token] = []
    for match in _TOKEN.finditer(text):
        start, end = match.span()
        if any(s <= start < e for s, e in skip):
            continue
        raw = match.group(0)
        negated = _NOT.match(raw)
        words = [negated.group(1), "not"] if negated else [raw]
        for word in words:
            norm = _normal(word)
            kind = "marker" if norm in MARKERS or word.lower() in MARKERS else "content"
            if kind == "content" and word.lower() in FUNCTION_WORDS:
                kind = "function"
            out.append(Token(norm, start, end, kind, capital=word[:1].isupper()))
    return out


def _normal(word: str) -> str:
    word = word.lower().replace("’", "'")
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def content(words: list[Token]) -> list[Token]:
    return [t for t in words if t.kind == "content"]


def markers(words: list[Token]) -> set[str]:
    return {t.word for t in words if t.kind == "marker"}


def denies(words: list[Token]) -> bool:
    return any(t.word in NEGATIONS for t in words if t.kind == "marker")


def says_enough(claim: list[Token]) -> bool:
    """A sentence with a word of its own beyond names (never names alone): one in lower case."""
    words = content(claim)
    return len(words) >= 2 and any(not t.capital for t in words)


def matched_span(claim: list[Token], passage: list[Token]) -> tuple[int, int] | None:
    """The first stretch of the passage holding the claim's content words in order with no
    other content word among them, as character offsets; None when there is none. Any word
    between can change what the sentence says (`won the primary but lost the election`,
    `makes parts for drones`, `the largest industrial city`)."""
    wanted = [t.word for t in content(claim)]
    have = content(passage)
    for i in range(len(have) - len(wanted) + 1):
        if all(have[i + k].word == word for k, word in enumerate(wanted)):
            return have[i].start, have[i + len(wanted) - 1].end
    return None


def roles(words: list[Token], span: tuple[int, int] | None = None) -> set[str]:
    """The role words among the content words of `words` (within `span`, when given)."""
    inside = content(words)
    if span is None and inside:
        span = (inside[0].start, inside[-1].end)
    if span is None:
        return set()
    return {t.word for t in words if t.word in ROLE_WORDS and span[0] <= t.start < span[1]}
