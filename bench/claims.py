"""Claim-support benchmark: the deterministic step of the claim check (`bot.agent.report.claims.
check`) against human-labelled (claim, evidence, label) pairs, now and as it was before.

The corpus is `bench/claims_data/` (provenance and licences in its SOURCES.md): samples of four
public claim-verification data sets, two of them held out (wice, fool_me_twice), and hand-written
hard cases for each way numbers are written. Each pair is checked as a report sentence citing
one source whose text is the evidence. The deterministic step answers supported, unsupported,
or nothing (the claim goes to the fast-model judge). Per data set, for all pairs and for the
pairs whose claim has a quantity:

- **supported, gold agrees**: of the deterministic *supported* verdicts, the share whose gold
  label is SUPPORTED (goal: at least 95%).
- **false alarms**: of the SUPPORTED pairs, the share called *unsupported*. On the pairs whose
  claim has a quantity this is the goal figure (under 2%): a person read the evidence and found
  it supports the claim, so it states each of the claim's quantities, in the same or another
  form (`2018–19` for `2018-2019`, `460 mm` for `18 in`, `1939 … 1945` for `six years`).
- **REFUTED caught**: of the REFUTED pairs, the share called *unsupported* without the judge.
- **to the judge**: the share of pairs the deterministic step leaves open (the judge's cost).

A claim "has a quantity" by the rule of SOURCES.md (`has_number`, after dropping tokens that put
a letter before a digit, such as `COVID-19` or `A320`); for the hard cases, `has_number`.

"Before" runs the deterministic check as it was at `BEFORE` (its `facts` module and `check`
function read from git); without git it is skipped. Exit 1 when an "after" goal is missed.

    python -m bench.claims [--sets check_covid,scifact] [--no-before]
    python -m bench.claims --fool-me-twice CHECKOUT   # also the whole held-out Fool Me Twice pool
    python -m bench.claims --covidfact CHECKOUT --climate-fever CHECKOUT   # development pools
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from text_to_num import alpha2digit

from bot.agent.report import claims
from bot.agent.report.support import Claim, Verdict

DATA = Path(__file__).resolve().parent / "claims_data"
ROOT = DATA.parent.parent
BEFORE = "92aea389c9699957a1fd55c7ea2d82ec43315a97"
SETS = ("check_covid", "scifact", "fever_symmetric", "hard_cases", "fool_me_twice", "wice")
HELD_OUT = ("fool_me_twice", "wice")
PRECISION_GOAL = 0.95
FALSE_ALARM_GOAL = 0.02
_DIGITS = re.compile(
    r"(\d[\d,.]*\d|\d)(?:\s?(thousand|million|billion|k|m|bn)\b)?"
    r"(?:\s?(%|(?:per\s?cent|percent|hours?|days?|weeks?|months?|years?|decades?)\b))?",
    re.I,
)
_MONTHS = re.compile(
    r"\b(January|February|March|April|May|June|July|August|September|October|November|December)\b"
)
_PLAIN_SCALES = {"thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "billion": 1e9, "bn": 1e9}
_NUMBER_WORDS = re.compile(
    r"\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
    r"sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|"
    r"hundreds?|thousands?|millions?|billions?|trillions?|dozens?|percent|per cent|percentage|half|"
    r"twice|thrice|double|triple|quadruple|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|"
    r"eleventh|twelfth|twentieth|hundredth|thousandth|twenties|thirties|forties|fifties|sixties|"
    r"seventies|eighties|nineties)\b",
    re.IGNORECASE,
)
Checker = Callable[[str, str], str]
"""(claim, evidence) → `supported`, `unsupported` or `judge`."""


@dataclass(frozen=True)
class Pair:
    id: str
    claim: str
    evidence: str
    label: str
    quantity: bool
    stated: bool
    """The evidence has each of the claim's numbers, by value (see `numbers_stated`)."""


@dataclass
class Figures:
    pairs: int = 0
    supported: int = 0
    supported_right: int = 0
    gold_supported: int = 0
    false_alarms: int = 0
    gold_refuted: int = 0
    refuted_caught: int = 0
    judged: int = 0
    stated: int = 0
    stated_alarms: int = 0

    def add(self, pair: Pair, verdict: str) -> None:
        self.pairs += 1
        self.judged += verdict == "judge"
        if verdict == "supported":
            self.supported += 1
            self.supported_right += pair.label == "SUPPORTED"
        if pair.label == "SUPPORTED":
            self.gold_supported += 1
            self.false_alarms += verdict == "unsupported"
        if pair.stated:
            self.stated += 1
            self.stated_alarms += verdict == "unsupported"
        if pair.label == "REFUTED":
            self.gold_refuted += 1
            self.refuted_caught += verdict == "unsupported"

    @property
    def precision(self) -> float | None:
        return self.supported_right / self.supported if self.supported else None

    @property
    def false_alarm_rate(self) -> float | None:
        """On the SUPPORTED pairs whose evidence states the claim's numbers (the goal's)."""
        return self.stated_alarms / self.stated if self.stated else None


def has_quantity(record: dict[str, object]) -> bool:
    """SOURCES.md's "with a quantity": `has_number` once letter-then-digit tokens are dropped."""
    if record["dataset"] == "hard_cases":
        return bool(record["has_number"])
    words = [w for w in str(record["claim"]).split() if not re.search(r"[^\W\d_].*\d", w)]
    text = " ".join(words)
    return bool(re.search(r"[\d%]", text) or _NUMBER_WORDS.search(text))


def _values(text: str) -> list[tuple[tuple[float, ...], str]]:
    """A deliberately plain reading, independent of the checker's: English number words as
    digits (text2num), every run of digits with its separators dropped, and that value times
    a thousand, million or billion when such a word follows (both values, as the old reader
    had them); each with the word of time or share right after it, if any (`2 weeks`, `5%`)."""
    out = []
    # Glue a scale word to its digits first: text2num would write `1.2 million` as `1.2 1000000`.
    text = re.sub(r"(\d)\s+(thousand|million|billion)\b", r"\1\2", text, flags=re.I)
    for match in _DIGITS.finditer(alpha2digit(text, "en", threshold=0)):
        value = float(match.group(1).replace(",", "")) if match.group(1).count(".") < 2 else 0.0
        scale = _PLAIN_SCALES[match.group(2).lower()] if match.group(2) else None
        out.append(((value, value * scale) if scale else (value,), _unit_word(match.group(3))))
    return out


def _scaled(text: str) -> list[tuple[float, str]]:
    """Each value of `text` as it is meant: `1.2 million` is 1,200,000, never 1.2."""
    return [(values[-1], unit) for values, unit in _values(text)]


def _unit_word(word: str | None) -> str:
    if word is None:
        return ""
    word = word.lower().replace(" ", "")
    return "%" if word in ("%", "percent") else word.rstrip("s")


def numbers_stated(claim: str, evidence: str) -> bool:
    """Whether the evidence states each number of the claim, in any notation: every value of
    the claim (letter-then-digit tokens dropped) is a value of the evidence, or within 1% of
    one when it is 10,000 or more or has decimals (rounded figures); where both say what the
    value counts in time or share, the same (`2 weeks` is not stated by `2 months`); and each
    month the claim names is named by the evidence too (`January 2000` is not `2000-2006`)."""
    words = " ".join(w for w in claim.split() if not re.search(r"[^\W\d_].*\d", w))
    wanted = _scaled(words)
    have = [(value, unit) for values, unit in _values(evidence) for value in values]
    months = {m[:3] for m in _MONTHS.findall(words)}
    named = all(re.search(rf"(?i)\b{month}", evidence) for month in months)
    return (
        named
        and bool(wanted)
        and all(any(_close(w, unit, h, their) for h, their in have) for w, unit in wanted)
    )


def _close(wanted: float, unit: str, have: float, their_unit: str) -> bool:
    if unit and their_unit and unit != their_unit:
        return False
    if wanted == int(wanted) and abs(wanted) < 10_000:
        return wanted == have
    return abs(wanted - have) <= 0.01 * abs(wanted)


def load(name: str) -> list[Pair]:
    lines = (DATA / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return [_pair(json.loads(line)) for line in lines]


def _pool_pair(dataset: str, id: str, claim: str, evidence: str, label: str) -> Pair:
    """A pair read from a whole data set's checkout, as `load` reads a vendored one."""
    record = {"id": id, "dataset": dataset, "claim": claim, "evidence": evidence, "label": label}
    return _pair(record)


def _pair(record: dict[str, Any]) -> Pair:
    claim, evidence = record["claim"], record["evidence"]
    hard = record["dataset"] == "hard_cases"
    stated = record["label"] == "SUPPORTED" and (hard or numbers_stated(claim, evidence))
    return Pair(record["id"], claim, evidence, record["label"], has_quantity(record), stated)


def fool_me_twice_pool(folder: Path) -> list[Pair]:
    """Every pair of Fool Me Twice's dev and test files (`dataset/*.jsonl` of a checkout of
    google-research/fool-me-twice at the commit SOURCES.md names), mapped, cleaned and
    deduplicated as SOURCES.md says, without the sampling: the held-out acceptance on about six
    times the pairs of the sample, read from the data set itself rather than vendored."""
    labels = {"SUPPORTS": "SUPPORTED", "REFUTES": "REFUTED"}
    seen: set[tuple[str, str]] = set()
    pairs = []
    for split in ("dev", "test"):
        for line in (
            (folder / "dataset" / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
        ):
            raw = json.loads(line)
            claim = " ".join(raw["text"].split())
            evidence = " ".join(" ".join(e["text"] for e in raw["gold_evidence"]).split())
            if (claim, evidence) in seen or len(evidence) > 2000 or raw["label"] not in labels:
                continue
            seen.add((claim, evidence))
            fm2_id, label = f"fm2-{split}-{raw['id']}", labels[raw["label"]]
            pairs.append(_pool_pair("fool_me_twice", fm2_id, claim, evidence, label))
    return pairs


def covidfact_pool(folder: Path) -> list[Pair]:
    """Every pair of COVIDFact (`COVIDFACT_dataset.jsonl` of a checkout of asaakyan/covidfact
    at the commit SOURCES.md names): its REFUTED claims are its SUPPORTED ones with a word or
    a number swapped, the same trap as Fool Me Twice's, so it tests *supported* in development."""
    lines = (folder / "COVIDFACT_dataset.jsonl").read_text(encoding="utf-8").splitlines()
    return [
        _pool_pair(
            "covidfact", f"covidfact-{i}", raw["claim"], " ".join(raw["evidence"]), raw["label"]
        )
        for i, raw in enumerate(map(json.loads, lines))
    ]


def climate_fever_pool(folder: Path) -> list[Pair]:
    """Every (claim, evidence sentence) of Climate-FEVER (`dataset/climate-fever.jsonl` of a
    checkout of tdiggelm/climate-fever-dataset), labelled by the sentence's own label: claims
    from the news and the web, against Wikipedia sentences that often share their numbers."""
    labels = {"SUPPORTS": "SUPPORTED", "REFUTES": "REFUTED", "NOT_ENOUGH_INFO": "NOT ENOUGH INFO"}
    lines = (folder / "dataset" / "climate-fever.jsonl").read_text(encoding="utf-8").splitlines()
    return [
        _pool_pair(
            "climate_fever",
            f"climate-fever-{evidence['evidence_id']}",
            raw["claim"],
            evidence["evidence"],
            labels[evidence["evidence_label"]],
        )
        for raw in map(json.loads, lines)
        for evidence in raw["evidences"]
    ]


POOLS = {
    "fool_me_twice": fool_me_twice_pool,
    "covidfact": covidfact_pool,
    "climate_fever": climate_fever_pool,
}
"""Whole data sets read from a checkout of their repository, not vendored (`--NAME CHECKOUT`)."""


def _verdict(claim: Claim | None) -> str:
    if claim is None or claim.verdict is Verdict.UNKNOWN:
        return "judge"
    return str(claim.verdict.value)


def after(claim: str, evidence: str) -> str:
    return _verdict(claims.check(claim, [1], [evidence]))


def before() -> Checker | None:
    """The deterministic check as it was at `BEFORE`: its `facts` module, and `check` taken out
    of its `claims` module (the rest of which imported what has since moved)."""
    try:
        facts_source = _git_show("bot/agent/report/facts.py")
        claims_source = _git_show("bot/agent/report/claims.py")
    except (OSError, subprocess.CalledProcessError):
        return None
    old_facts = types.ModuleType("bench_old_facts")
    sys.modules[old_facts.__name__] = old_facts  # dataclasses look their module up
    exec(compile(facts_source, "old_facts.py", "exec"), old_facts.__dict__)
    tree = ast.parse(claims_source)
    check = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check")
    namespace: dict[str, object] = {
        "facts": old_facts,
        "Claim": Claim,
        "Verdict": Verdict,
        "DETERMINISTIC": "deterministic",
    }
    code = "from __future__ import annotations\n" + ast.unparse(check)
    exec(compile(code, "old_check.py", "exec"), namespace)
    old_check = namespace["check"]
    return lambda claim, evidence: _verdict(old_check(claim, [1], [evidence]))  # type: ignore[operator]


def _git_show(path: str) -> str:
    return subprocess.run(
        ["git", "show", f"{BEFORE}:{path}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout


def measure(pairs: list[Pair], checker: Checker) -> tuple[Figures, Figures]:
    """(all pairs, pairs whose claim has a quantity)."""
    every, counted = Figures(), Figures()
    for pair in pairs:
        verdict = checker(pair.claim, pair.evidence)
        every.add(pair, verdict)
        if pair.quantity:
            counted.add(pair, verdict)
    return every, counted


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} = {part / whole:.1%}" if whole else "-"


def row(name: str, subset: str, code: str, f: Figures) -> str:
    refuted = _share(f.refuted_caught, f.gold_refuted) if f.gold_refuted else "(no REFUTED)"
    stated = _share(f.stated_alarms, f.stated) if subset != "all" else ""
    return (
        f"| {name} | {subset} | {code} | {f.pairs} | {_share(f.supported_right, f.supported)} | "
        f"{stated} | {_share(f.false_alarms, f.gold_supported)} | {refuted} | "
        f"{_share(f.judged, f.pairs)} |"
    )


def goals(name: str, every: Figures, counted: Figures) -> list[str]:
    missed = []
    for subset, figures in (("all", every), ("with a quantity", counted)):
        if figures.precision is not None and figures.precision < PRECISION_GOAL:
            missed.append(f"{name} ({subset}): supported agrees {figures.precision:.1%} < 95%")
    if counted.false_alarm_rate is not None and counted.false_alarm_rate >= FALSE_ALARM_GOAL:
        missed.append(f"{name}: false alarms (numbers stated) {counted.false_alarm_rate:.1%} ≥ 2%")
    return missed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated data sets")
    parser.add_argument("--no-before", action="store_true", help="skip the code as it was")
    for name in POOLS:
        parser.add_argument(
            f"--{name.replace('_', '-')}",
            type=Path,
            metavar="CHECKOUT",
            help=f"also the whole {name} pool, from a checkout of its repository",
        )
    args = parser.parse_args(argv)
    if unknown := set(args.sets.split(",")) - set(SETS):
        parser.error(
            f"--sets: no data set {', '.join(sorted(unknown))}; the sets are {', '.join(SETS)}"
        )
    sets = [(name, load(name)) for name in args.sets.split(",")]
    samples = len(sets)
    for name, read in POOLS.items():
        if (folder := vars(args)[name]) is not None:
            try:
                sets.append((name, read(folder)))
            except FileNotFoundError as missing:
                flag = name.replace("_", "-")
                parser.error(f"--{flag} {folder}: no {missing.filename}; give a checkout of it")
    old = None if args.no_before else before()
    print(
        "| data set | pairs | code | n | supported: gold agrees (goal ≥ 95%) | false alarms, "
        "numbers stated (goal < 2%) | false alarms, all SUPPORTED | REFUTED caught | to the judge |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    missed: list[str] = []
    started = time.perf_counter()
    for n, (name, pairs) in enumerate(sets):
        label = f"{name} (held out)" if name in HELD_OUT else name
        label += ", whole pool" if n >= samples else ""
        now = measure(pairs, after)
        then = measure(pairs, old) if old is not None else None
        for i, subset in enumerate(("all", "with a quantity")):
            if then is not None:
                print(row(label, subset, "before", then[i]))
            print(row(label, subset, "after", now[i]))
        missed += goals(label, *now)
    print(
        f"\n({time.perf_counter() - started:.1f} s; before = {BEFORE[:7]}"
        + (")" if old else ", not run)")
    )
    for line in missed:
        print(f"MISSED: {line}")
    print("PASS" if not missed else "FAIL")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
