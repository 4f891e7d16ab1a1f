"""The claim benchmark's own reader of "the evidence states the claim's numbers", which picks
the pairs its false-alarm goal is measured on: plain, but not fooled by a number of another kind."""

from __future__ import annotations

import pytest

from bench.claims import main, numbers_stated


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("It rose 12 percent in 2019.", "In 2019 it grew by 12%."),
        ("It has 1.2 million users.", "It has 1,200,000 users."),
        ("Three stores opened.", "3 stores opened."),
        ("It opened on 9 April 1865.", "It opened on April 9, 1865."),
        ("It lasted two weeks.", "It lasted 2 weeks and cost 2 million."),
    ],
)
def test_a_number_in_another_notation_is_stated(claim: str, evidence: str) -> None:
    assert numbers_stated(claim, evidence)


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("It lasted two weeks.", "It lasted two months."),
        ("It fell 5 percent.", "It fell for 5 years."),
        ("It began in January 2000.", "It ran from 2000 to 2006."),
        ("It rose 12 percent.", "It rose 13%."),
    ],
)
def test_a_number_of_another_kind_or_month_is_not_stated(claim: str, evidence: str) -> None:
    assert not numbers_stated(claim, evidence)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--sets", "nosuch"], "no data set nosuch"),
        (["--covidfact", "/nonexistent"], "COVIDFACT_dataset.jsonl; give a checkout of it"),
    ],
)
def test_a_wrong_set_or_checkout_is_one_line_not_a_traceback(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--no-before", *argv])
    assert stopped.value.code == 2
    assert said in capsys.readouterr().err
