"""Deep run effort: the research model's output tokens and the wall time of a deep run, today's
engine against the one before the report was written once (`BASELINE`), in one command.

Each engine runs in its own subprocess: the baseline's `bot` package is taken from git
(`git archive`) into a temporary directory and put first on the path; today's is this
checkout's. Both are driven by the same scripted model (bench/deep_effort_world.py), which
answers each call as a real model would answer what that call asks for, with replies sized
like a real model's (what the sizes assume: bench/README.md), and waits for each reply as if it
were generated at `TOKENS_PER_S`. Searches and pages are scripted too (no network).

    python -m bench.deep_effort [--baseline COMMIT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.deep_effort_world import FIRST_TOKEN_S, SCENARIOS, TOKENS_PER_S, TOOL_S, run_side

BASELINE = "5c6e3574fe93467a948a37fc24cb2e40aaa29759"
"""The last commit whose deep run had the supervisor write a draft and the writer a report."""
ROOT = Path(__file__).resolve().parent.parent


def side(root: str) -> None:
    import bot

    if not Path(bot.__file__).resolve().is_relative_to(Path(root).resolve()):
        raise SystemExit(f"imported {bot.__file__}, not the bot under {root}")
    print(json.dumps([asyncio.run(run_side(s)) for s in SCENARIOS]))


# -- the two engines, side by side -------------------------------------------------------------


def measure(root: Path) -> list[dict[str, Any]]:
    # `root` first: its `bot` is the one imported (this checkout's `bench` comes after it).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-m", "bench.deep_effort", "--side", str(root)],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"the run under {root} failed:\n{done.stderr[-3000:]}")
    result: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def baseline_tree(commit: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, "bot"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def after(row: dict[str, Any]) -> int:
    tokens: dict[str, int] = row["tokens"]
    return tokens["supervisor"] + tokens["writer"]


def research_total(row: dict[str, Any]) -> int:
    tokens: dict[str, int] = row["tokens"]
    return tokens["plan"] + tokens["researchers"] + after(row)


def report(before: list[dict[str, Any]], now: list[dict[str, Any]]) -> None:
    print(
        f"deep run, scripted model at {TOKENS_PER_S:,.0f} output tokens/s (+{FIRST_TOKEN_S * 1000:.0f} "
        f"ms a reply), tools {TOOL_S * 1000:.0f} ms; research-model output tokens by stage"
    )
    head = (
        f"{'scenario':<30} {'engine':<7} {'team':>4} {'plan':>5} {'research':>8} "
        f"{'superv.':>8} {'writer':>7} {'after':>6} {'total':>6} {'judge':>6} "
        f"{'wall':>7} {'after':>7}"
    )
    print(head)
    for old, new in zip(before, now, strict=True):
        for label, row in (("before", old), ("now", new)):
            t = row["tokens"]
            print(
                f"{row['scenario'] if label == 'before' else '':<30} {label:<7} "
                f"{row['researchers']:>4} {t['plan']:>5} {t['researchers']:>8} "
                f"{t['supervisor']:>8} {t['writer']:>7} {after(row):>6} {research_total(row):>6} "
                f"{t['judge']:>6} {row['wall_s']:>6.2f}s {row['after_s']:>6.2f}s"
            )
        print(
            f"{'':<30} {'ratio':<7} {'':>4} {'':>5} {'':>8} {'':>8} {'':>7} "
            f"{after(new) / after(old):>6.2f} {research_total(new) / research_total(old):>6.2f} "
            f"{'':>6} {new['wall_s'] / old['wall_s']:>7.2f} {new['after_s'] / old['after_s']:>7.2f}"
        )
    print(
        "after: the supervisor's and the writer's output (everything after the first round of "
        "researchers but a gap round's researchers); total: plan + researchers + after; judge: "
        "the claim judge on the fast model, not counted in total; wall: the whole run; after "
        "(wall): from the last finding to the end"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help="the commit measured as before")
    parser.add_argument("--side", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        side(args.side)
        return
    with tempfile.TemporaryDirectory(prefix="deep-effort-") as tmp:
        before = measure(baseline_tree(args.baseline, Path(tmp)))
    report(before, measure(ROOT))


if __name__ == "__main__":
    main()
