"""The deterministic step of claim support: numbers read the way people write them (each form as
a pair the source supports in another form, and a pair it refutes), negations and quantifiers,
and identifiers that are not quantities."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.agent.report import facts
from bot.agent.report.claims import check
from bot.agent.report.support import Verdict
from tests.agent.report.number_forms import MORE_FORMS

HARD_CASES = Path(__file__).resolve().parents[3] / "bench" / "claims_data" / "hard_cases.jsonl"

FORMS = [
    # (form, claim, the same in another form, something else)
    ("more than", "It has more than 183 seats.", "It seats 184.", "It seats 183."),
    (
        "before",
        "It was finished before 1967.",
        "It was finished in 1965.",
        "It was finished in 1968.",
    ),
    ("after", "It was founded after 1990.", "It was founded in 1994.", "It was founded in 1988."),
    ("at least", "At least 40 people were hurt.", "42 people were hurt.", "37 people were hurt."),
    (
        "or more",
        "Gatherings of more than 250 people are banned.",
        "Gatherings of 250 or more people are banned.",
        "Gatherings of 200 or fewer people are allowed.",
    ),
    (
        "or younger",
        "Children under 12 ride free.",
        "Those 11 or younger ride free.",
        "Those 13 or older ride free.",
    ),
    ("under", "It has under 500 staff.", "It employs 480 people.", "It employs 520 people."),
    ("nearly", "Nearly 10,000 ran.", "A total of 9,870 runners started.", "6,200 runners started."),
    ("about", "About 30 percent own a car.", "29.6% own a car.", "26% own a car."),
    (
        "roughly",
        "It has roughly 1.5 million people.",
        "It counted 1,482,000.",
        "It counted 1,210,000.",
    ),
    (
        "range",
        "It runs from 12 to 15 June.",
        "It takes place on 12–15 June.",
        "It is on 12–18 June.",
    ),
    (
        "ordinal date",
        "He left on April 9th, 1865.",
        "He left on 9 April 1865.",
        "He left on 19 April 1865.",
    ),
    (
        "ordinal word",
        "It is the band's fourth album.",
        "It is the fourth album.",
        "It is the third album.",
    ),
    (
        "century",
        "It was built in the 12th century.",
        "It was built around 1150.",
        "It was built in 1250.",
    ),
    ("decade", "It came out in the 1990s.", "It came out in 1994.", "It came out in 1989."),
    (
        "decade word",
        "He was born in the fifties.",
        "He was born on 20 July 1953.",
        "He was born in 1947.",
    ),
    (
        "year range",
        "He scored in the 2018–19 season.",
        "In the 2018-2019 season.",
        "In the 2019-2020 season.",
    ),
    (
        "duration",
        "The war lasted six years.",
        "It began in 1939 and ended in 1945.",
        "It ran 1939 to 1943.",
    ),
    (
        "points",
        "It fell by 2 percentage points.",
        "It fell from 7.5% to 5.5%.",
        "It fell from 7.5% to 6.5%.",
    ),
    (
        "change",
        "Sales rose by 25 percent.",
        "Sales rose from 40,000 to 50,000.",
        "From 40,000 to 45,000.",
    ),
    ("fraction", "A quarter of them cycle.", "25% of them cycle.", "40% of them cycle."),
    ("per cent", "Turnout was twelve per cent.", "Turnout stood at 12%.", "Turnout stood at 21%."),
    (
        "doubled",
        "Prices doubled.",
        "Prices rose from $200 to $400.",
        "Prices rose from $200 to $300.",
    ),
    (
        "spelled",
        "It had three hundred and twelve delegates.",
        "It had 312 delegates.",
        "It had 321.",
    ),
    (
        "German",
        "It had 2 million visitors.",
        "Es zählte zwei Millionen Besucher.",
        "Es zählte drei Millionen.",
    ),
    (
        "German compound",
        "It is 324 metres tall.",
        "Er ist dreihundertvierundzwanzig Meter hoch.",
        "Er ist 342 Meter hoch.",
    ),
    (
        "French",
        "It holds 3,000 books.",
        "Elle compte trois mille livres.",
        "Elle compte trois cents livres.",
    ),
    (
        "Spanish",
        "It had 2.5 million tourists.",
        "Recibió dos millones y medio de turistas.",
        "Recibió dos millones.",
    ),
    (
        "k",
        "The video had 250k views.",
        "It was viewed 250,000 times.",
        "It was viewed 25,000 times.",
    ),
    (
        "bn",
        "Revenue was $3.4bn.",
        "Revenue was 3.4 billion dollars.",
        "Revenue was 3.4 million dollars.",
    ),
    ("lakh", "It covers 5 lakh homes.", "It covers 500,000 homes.", "It covers 5 million homes."),
    ("crore", "It cost ₹250 crore.", "It cost 2.5 billion rupees.", "It cost 250 million rupees."),
    (
        "Milliarde",
        "The budget is €2 billion.",
        "Das Budget beträgt 2 Milliarden Euro.",
        "Es sind 2 Billionen Euro.",
    ),
    (
        "inch",
        "The pipe has an 18 in diameter.",
        "Its diameter is 460 mm.",
        "Its diameter is 180 mm.",
    ),
    (
        "miles",
        "The trail is 100 km long.",
        "It stretches for 62 miles.",
        "It stretches for 100 miles.",
    ),
    ("Fahrenheit", "It reached 40 °C.", "It climbed to 104 °F.", "It climbed to 40 °F."),
    ("minus", "It dropped to minus 20 °C.", "It fell to −20 °C.", "It fell to 20 °C."),
    ("glued unit", "Warming reached 1.9C.", "Warming reached 1.9 °C.", "Warming reached 1.5 °C."),
    (
        "currency",
        "The deal was worth $1.2bn.",
        "It was valued at USD 1,200 million.",
        "At USD 120 million.",
    ),
    (
        "currency code",
        "It paid €45 million.",
        "It paid a fee of EUR 45m.",
        "It paid a fee of GBP 45m.",
    ),
    (
        "decimal comma",
        "The grant was worth €1.5 million.",
        "Sie beträgt 1,5 Mio. €.",
        "Sie beträgt 15 Mio. €.",
    ),
    (
        "thousands dot",
        "It has 1,500 employees.",
        "Es beschäftigt 1.500 Mitarbeiter.",
        "Es beschäftigt 150.",
    ),
    (
        "glued word",
        "Spain joined in 1986.",
        "Dates: Greece1981, Spain1986.",
        "Dates: Greece1981, Spain1985.",
    ),
    (
        "footnote",
        "The river has 5 tributaries.",
        "It is long[3] and has five tributaries.",
        "It is long[5].",
    ),
    ("dotted date", "It was signed on 11 June 2003.", "Signed: 2003.06.11", "Signed: 2003.11.06"),
    (
        "slashed date",
        "It was signed on 25 June 2003.",
        "Signed on 25/06/2003.",
        "Signed on 25/07/2003.",
    ),
    (
        "US date",
        "It took effect on June 25, 2003.",
        "Effective: 06/25/2003.",
        "Effective: 06/15/2003.",
    ),
    (
        "identifier",
        "COVID-19 cases rose 3 percent.",
        "Cases increased by 3%.",
        "COVID-19 cases rose 19%.",
    ),
]


@pytest.mark.parametrize(
    ("form", "claim", "same", "other"), FORMS + MORE_FORMS, ids=[f[0] for f in FORMS + MORE_FORMS]
)
def test_a_number_stated_in_another_form_is_found_and_a_different_one_is_not(
    form: str, claim: str, same: str, other: str
) -> None:
    found = check(f"{claim} [1]", [1], [same])
    assert found is None or found.verdict is not Verdict.UNSUPPORTED, (form, found)
    refuted = check(f"{claim} [1]", [1], [other])
    assert refuted is not None and refuted.verdict is Verdict.UNSUPPORTED, (form, refuted)


WORDING = [
    # (claim, a passage saying the same, a passage saying something else)
    (
        "The band has never toured in Japan.",
        "The band has never toured in Japan.",
        "The band has toured in Japan.",
    ),
    (
        "Venus doesn't have a moon.",
        "Venus doesn't have a moon, astronomers say.",
        "Venus has a moon.",
    ),
    (
        "The band toured in Japan.",
        "In 1998 the band toured in Japan.",
        "The band never toured in Japan.",
    ),
    (
        "Some of its members were born in Ireland.",
        "Some of its members were born in Ireland.",
        "All of its members were born in Ireland.",
    ),
    (
        "All of its members were born in Ireland.",
        "All of its members were born in Ireland.",
        "Some of its members were born in Ireland.",
    ),
    (
        "None of the passengers were injured.",
        "None of the passengers were injured.",
        "Some of the passengers were injured.",
    ),
    (
        "Only two stores opened in 2020.",
        "Only two stores opened in 2020.",
        "Two stores opened in 2020.",
    ),
    (
        "The drug reduces deaths.",
        "The drug reduces deaths in adults.",
        "The drug may reduce deaths.",
    ),
    (
        "Steven Knight is a screenwriter.",
        "Steven Knight is a screenwriter and director.",
        "Steven Knight is a singer.",
    ),
    (
        "Germany beat Argentina in the final.",
        "Germany beat Argentina in the final.",
        "Argentina beat Germany in the final.",
    ),
    (
        "Leeds is the largest city in the county.",
        "Leeds is the largest city in the county.",
        "Leeds is the second largest city in the county.",
    ),
    (
        "It has 37 warehouses in Europe.",
        "It has 37 warehouses in Europe.",
        "It has 37 warehouses and none in Europe.",
    ),
    # Words that say it is not so, or not quite: contrast, falsity, a near miss.
    (
        "Its lung injury is high altitude pulmonary edema.",
        "In these patients the lung injury is high altitude pulmonary edema.",
        "The lung injury is different from high altitude pulmonary edema.",
    ),
    (
        "The founder dropped out of Harvard.",
        "The founder dropped out of Harvard in 1975.",
        "The story that the founder dropped out of Harvard was debunked.",
    ),
    (
        "The startup won the pitch competition.",
        "The startup won the pitch competition in Berlin.",
        "The startup almost won the pitch competition.",
    ),
    # Only a name may come between the sentence's words.
    (
        "The company makes drones.",
        "The company makes drones for farms.",
        "The company makes parts for drones.",
    ),
    (
        "She won the election.",
        "In 2019 she won the election.",
        "She won the primary but lost the election.",
    ),
    # Who did what to whom, and the exact class of a superlative.
    (
        "Acme was acquired by Globex.",
        "Acme was acquired by Globex in 2019.",
        "Acme acquired Globex.",
    ),
    (
        "Glasgow is the largest city in Scotland.",
        "Glasgow is the largest city in Scotland.",
        "Glasgow is the largest industrial city in Scotland.",
    ),
    # A measure is stated with its unit, in the sentence of the matched words.
    (
        "The fund is worth 16 million euros.",
        "The fund is worth €16 million.",
        "The fund is worth 16 million.",
    ),
    (
        "The plant opened in 2019.",
        "The plant opened in 2019 after two years of work.",
        "The plant opened to great fanfare. Its owner was founded in 2019.",
    ),
]


@pytest.mark.parametrize(("claim", "same", "other"), WORDING)
def test_supported_only_when_a_passage_says_the_same_negations_and_quantifiers_included(
    claim: str, same: str, other: str
) -> None:
    found = check(f"{claim} [1]", [1], [same])
    assert found is not None and found.verdict is Verdict.SUPPORTED, found
    different = check(f"{claim} [1]", [1], [other])
    assert different is None or different.verdict is not Verdict.SUPPORTED, different


def test_names_alone_never_support_a_claim() -> None:
    assert check("Steven Knight [1].", [1], ["Steven Knight wrote it."]) is None
    assert check("Tom Ford directed A Single Man [1].", [1], ["A Single Man by Tom Ford."]) is None


def test_a_denied_statement_is_not_refuted_by_its_number_missing() -> None:
    source = "In 2018 she signed her first recording contract."
    denied = check("She did not sign a recording contract in 2014 [1].", [1], [source])
    assert denied is None or denied.verdict is not Verdict.UNSUPPORTED
    stated = check("She signed a recording contract in 2014 [1].", [1], [source])
    assert stated is not None and stated.verdict is Verdict.UNSUPPORTED


@pytest.mark.parametrize(
    "sentence",
    [
        "COVID-19 spread fast.",
        "SARS-CoV-2 spread fast.",
        "The Airbus A320 flies.",
        "It is certified to ISO 9001.",
        "It treats type 2 diabetes.",
        "The 14th Dalai Lama lives in India.",
        "Interleukin-2 signals weakly.",
        "Louis XIV revoked it.",
    ],
)
def test_an_identifier_is_not_a_quantity(sentence: str) -> None:
    assert facts.claim(sentence).quantities == []


def test_a_bound_said_after_a_number_is_read_but_not_one_that_starts_a_comparison() -> None:
    (crowd,) = facts.claim("Gatherings of 250 or more people are banned.").quantities
    assert [(r.low, r.high) for r in crowd.readings] == [(250, float("inf"))]
    first, _ = facts.claim("Fees rose from 5 and up to 10 euros.").quantities
    assert all(r.high < 6 for r in first.readings), first


def test_a_date_inside_a_longer_code_is_not_read() -> None:
    doi = facts.source("Posted as doi:10.1101/2020.03.05.20031773 on 9 March 2020.")
    assert not any(
        r.unit.dimension == "date" and r.low == 20200305 for q in doi.stated for r in q.readings
    )
    dated = facts.source("Posted on 2020.03.05.")
    assert any(
        r.unit.dimension == "date" and r.low == 20200305 for q in dated.stated for r in q.readings
    )


def test_a_unit_glued_to_a_decimal_keeps_the_decimal() -> None:
    (warming,) = facts.claim("Warming reached 1.9C.").quantities
    (reading,) = warming.readings
    assert (reading.low, reading.high) == (pytest.approx(1.85), pytest.approx(1.95))
    assert reading.unit.dimension == "temperature"


def _hard_cases() -> list[dict[str, str]]:
    return [json.loads(line) for line in HARD_CASES.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("case", _hard_cases(), ids=lambda case: case["id"])
def test_no_hard_case_is_turned_around(case: dict[str, str]) -> None:
    """Supported pairs are never called unsupported, refuted ones never supported."""
    claim = check(case["claim"], [1], [case["evidence"]])
    wrong = Verdict.UNSUPPORTED if case["label"] == "SUPPORTED" else Verdict.SUPPORTED
    assert claim is None or claim.verdict is not wrong, claim
