"""More ways people write numbers (Wikipedia and news prose), each as a pair the source supports
in another form and a pair it refutes: shares in words, odds and ratios, vague amounts, bounds
on dates, parts of decades and centuries, ages, conversions that round, and what is a name."""

from __future__ import annotations

import pytest

from bot.agent.report import facts
from bot.agent.report.claims import check
from bot.agent.report.support import Verdict

FORMS = [
    # (form, claim, the same in another form, something else)
    ("c.", "It had c. 1,200 members.", "It had 1,187 members.", "It had 950 members."),
    ("1.2 million", "It has 1.2 million people.", "It has 1,204,000.", "It has 1,600,000."),
    ("mid-decade", "It formed in the mid-1990s.", "It formed in 1995.", "It formed in 1991."),
    ("early decade", "It began in the early 2000s.", "It began in 2002.", "It began in 2008."),
    ("late century", "Built in the late 19th century.", "Built in 1887.", "Built in 1912."),
    ("two-thirds", "Two-thirds of voters agreed.", "67% of voters agreed.", "45% agreed."),
    ("a third", "A third of the staff left.", "33% of the staff left.", "50% left."),
    ("more than a third", "More than a third were nurses.", "Nurses: 36.3%.", "Nurses: 21%."),
    ("two-fifths", "Two-fifths of it is forest.", "Forest covers 40%.", "Forest covers 25%."),
    (
        "by half",
        "Costs fell by half.",
        "Costs fell from €80m to €40m.",
        "Costs fell from €80m to €70m.",
    ),
    ("half a million", "Half a million came.", "Some 500,000 came.", "Some 50,000 came."),
    ("and a half", "It took two and a half years.", "It took 2.5 years.", "It took 4 years."),
    ("a dozen", "A dozen were arrested.", "Police arrested 12.", "Police arrested 30."),
    ("3-to-1", "It passed 3-to-1.", "It passed 75 votes to 25.", "It passed 60 votes to 40."),
    ("1 in 4", "About 1 in 4 had a clot.", "25% had a clot.", "45% had a clot."),
    ("one in five", "One in five adults smoke.", "20% of adults smoke.", "35% of adults smoke."),
    (
        "more than one in ten",
        "More than one in ten were infected.",
        "15% were infected.",
        "5% were infected.",
    ),
    ("2010/11", "He joined in 2010/11.", "He joined in 2010–11.", "He joined in 2013–14."),
    ("£5m", "The fee was £5m.", "The fee was £5 million.", "The fee was £8 million."),
    ("US$", "It cost US$3 billion.", "It cost $3,000 million.", "It cost $300 million."),
    ("5,000+", "It drew 5,000+ fans.", "It drew 5,400 fans.", "It drew 3,000 fans."),
    ("up to", "It carries up to 400.", "It carries 380.", "It carries 450."),
    ("as many as", "As many as 300 died.", "The flood killed 280.", "The flood killed 500."),
    ("between", "Between 10 and 20 were hurt.", "14 were hurt.", "25 were hurt."),
    ("by year", "By 1900 it had a station.", "Its station opened in 1887.", "It opened in 1921."),
    (
        "by month",
        "By June 2020 few had it.",
        "During March to early May 2020 few had it.",
        "In August 2020 few had it.",
    ),
    ("before decade", "It closed before the 1990s.", "It closed in 1987.", "It closed in 1994."),
    ("top 10", "It reached the top 10.", "It peaked at number 7.", "It peaked at number 23."),
    ("nine-year", "He served a nine-year term.", "He served 9 years.", "He served 7 years."),
    (
        "second-largest",
        "It is the second-largest city.",
        "It is the second largest city.",
        "It is the third largest city.",
    ),
    (
        "50-year-old",
        "The 50-year-old was held.",
        "He, aged 50, was held.",
        "He, aged 35, was held.",
    ),
    ("in her 80s", "She died in her 80s.", "She died aged 83.", "She died aged 76."),
    (
        "age from years",
        "She died at the age of 59.",
        "Jane Doe (12 March 1950 – 5 January 2010).",
        "Jane Doe (12 March 1950 – 5 January 2020).",
    ),
    (
        "1920s and 30s",
        "It thrived in the 1920s and 30s.",
        "From 1925 to 1935.",
        "From 1950 to 1960.",
    ),
    (
        "17th and 18th centuries",
        "It was played in the 17th and 18th centuries.",
        "It was played from 1650 to 1780.",
        "It was played from 1850 to 1880.",
    ),
    ("1990–95", "He led it in 1990–95.", "He led it from 1990 to 1995.", "From 2001 to 2006."),
    ("circa year", "It was built circa 1150.", "It was built in 1152.", "It was built in 1190."),
    ("roughly 100", "It lasted roughly 100 years.", "From 1337 to 1453.", "From 1337 to 1360."),
    (
        "several hundred",
        "It ran several hundred hours.",
        "It ran over 500 hours.",
        "It ran 20 hours.",
    ),
    ("fell by", "Sales fell by 20 percent.", "From 150 to 120 units.", "From 150 to 140 units."),
    ("month of a day", "It began in February 2020.", "It began on February 20.", "On March 20."),
    ("day of a month", "It was held on the 15th.", "It was held on 15 March.", "On 17 March."),
    ("mph", "It reached 100 mph.", "It reached 160 km/h.", "It reached 200 km/h."),
    ("area", "It covers 2,500 km2.", "It covers 965 sq mi.", "It covers 2,500 sq mi."),
    ("feet", "It is 300 ft tall.", "It is 91 m tall.", "It is 300 m tall."),
    ("feet and inches", "He is 5 ft 10 in tall.", "He is 1.78 m tall.", "He is 1.90 m tall."),
    ("Roman numeral", "He fought in World War 2.", "In World War II.", "In the Korean War, 1950."),
    ("over (during)", "It ran over three days.", "The three-day fair.", "The two-day fair."),
    ("year boundary", "He left before 1967.", "He left in early 1967.", "He left in 1969."),
    (
        "glued lower case",
        "It opened in 2010.",
        "Opened in 2010and still open.",
        "In 2012and since.",
    ),
    (
        "beside a name",
        "2 American soldiers died.",
        "Two American soldiers died.",
        "Five Dutch died.",
    ),
    (
        "1.5-million",
        "It cost 1.5 million dollars.",
        "A 1.5-million-dollar deal.",
        "A 2.5-million deal.",
    ),
    (
        "odds as a count",
        "He won 5 in 12 starts.",
        "He won five of his 12 starts.",
        "He won 3 of 12.",
    ),
]


@pytest.mark.parametrize(("form", "claim", "same", "other"), FORMS, ids=[f[0] for f in FORMS])
def test_a_number_stated_in_another_form_is_found_and_a_different_one_is_not(
    form: str, claim: str, same: str, other: str
) -> None:
    found = check(f"{claim} [1]", [1], [same])
    assert found is None or found.verdict is not Verdict.UNSUPPORTED, (form, found)
    refuted = check(f"{claim} [1]", [1], [other])
    assert refuted is not None and refuted.verdict is Verdict.UNSUPPORTED, (form, refuted)


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
