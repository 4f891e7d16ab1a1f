"""A report's footer lines in its language: claim support, and the run's figures. Numbers are
written the language's way (Babel's locale data: `1,060` in English, `1.060` in German,
`1 060` in French)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from babel.numbers import format_currency, format_decimal

from bot.agent.language import frame
from bot.agent.report.support import DETERMINISTIC, JUDGE, Support, Verdict

if TYPE_CHECKING:
    from bot.domain import RunRecord


def number(value: int, language: str) -> str:
    return format_decimal(value, locale=language)


def cost(value: float | None, language: str, digits: int = 4) -> str:
    """`$0.0123` in English, `0,0123 $` in German; the language's "cost unknown" for None."""
    if value is None:
        return frame(language).cost_unknown
    return format_currency(round(value, digits), "USD", locale=language, decimal_quantization=False)


def support_line(support: Support, language: str) -> str:
    """How many cited claims are supported, not supported, left unchecked, and how they were
    checked; then the statements marked for lost citations, when there are any."""
    words = frame(language)
    n = {
        "claims": len(support.claims),
        "supported": support.count(Verdict.SUPPORTED),
        "unsupported": support.count(Verdict.UNSUPPORTED),
        "unchecked": support.unchecked,
        "judged": support.checked_by(JUDGE),
        "settled": support.checked_by(DETERMINISTIC),
    }
    line = words.support.format(**{k: number(v, language) for k, v in n.items()})
    if support.unverified:
        uncited = number(support.unverified, language)
        line += words.uncited.format(uncited=uncited, mark=words.unverified_mark)
    return line


def run_line(run: RunRecord, ending: str, language: str) -> str:
    return frame(language).footer.format(
        run_id=run.run_id,
        turns=number(run.turns, language),
        ending=ending,
        input=number(run.input_tokens, language),
        output=number(run.output_tokens, language),
        cache_read=number(run.cache_read_tokens, language),
        cache_write=number(run.cache_write_tokens, language),
        cost=cost(run.cost_usd, language),
    )
