"""Words that are not sizes, digit grouping by language, and a name's numbers in a matching
passage (the number forms themselves are in `number_forms.py`, checked in `test_facts.py`)."""

from __future__ import annotations

import pytest

from bot.agent.report import facts
from bot.agent.report.claims import check
from bot.agent.report.support import Verdict


@pytest.mark.parametrize(
    ("claim", "source"),
    [
        # A lone `one` or `first` is as often a word as a number.
        ("It is one of the largest cities.", "It ranks among the largest cities."),
        ("It was the first film to win.", "It was the earliest film to win, in 1 year."),
        # A number word joined to a kind is no count (`second-hand`, `two-way`).
        ("She bought a second-hand car.", "She bought a used car."),
        ("It has a two-way radio.", "It has a radio."),
        # `hundreds of`, `thousands of`: a manner of speaking, not a size.
        ("Hundreds of people protested.", "People protested."),
        ("Thousands of cases were reviewed.", "The review found two cases."),
    ],
)
def test_words_that_are_not_sizes_are_never_unsupported(claim: str, source: str) -> None:
    found = check(f"{claim} [1]", [1], [source])
    assert found is None or found.verdict is not Verdict.UNSUPPORTED, found


def test_a_claim_in_english_reads_a_comma_as_a_thousands_separator() -> None:
    (fans,) = facts.claim("It drew 5,000+ fans.").quantities
    assert [(r.low, r.high) for r in fans.readings] == [(5000, float("inf"))]
    german = facts.claim("Es kamen 5,000 Fans.", "de").quantities[0]
    assert len(german.readings) == 2  # 5000, or 5 with three decimals


def test_a_name_s_numbers_do_not_stop_a_passage_saying_the_same_thing() -> None:
    same = "The album peaked at number 7 on the chart in World War II."
    found = check(f"{same} [1]", [1], [same])
    assert found is not None and found.verdict is Verdict.SUPPORTED, found
