"""Export: time and peak memory to write a long report (about 8,000 words, 60 sources) in each
format, through the real `bot.export.render`.

The report is generated here, deterministically: 16 sections of prose with `[n]` citations
spread over 60 sources, bullet lists, a table, a code block, and paragraphs in Cyrillic,
Japanese and Arabic. Each format is measured in a fresh child process, so that one format's
libraries and caches do not count against another: the libraries are imported first, then
the report is rendered three times. Figures: the first render (what a user waits for once
the process is up), the median of the three, the process's peak RSS over the whole
measurement and how much of it the rendering added over the process before it, the file's
size, and the longest an event loop waited past a 10 ms timer while `export` rendered in its
worker thread.

    python -m bench.export
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import random
import resource
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime

from bot.agent.report.model import Report, Section, Source, render_markdown
from bot.domain import Mode, Origin, RunRecord, RunStatus
from bot.export import Format, export, render

SOURCES = 60
LIBRARIES = {Format.PDF: "bot.export.pdf_doc", Format.DOCX: "bot.export.word_doc"}
SECTIONS = 16
WORDS = [
    "acme", "robotics", "warehouse", "automation", "revenue", "growth", "customers", "market",
    "share", "funding", "series", "investors", "logistics", "europe", "asia", "pipeline",
    "contracts", "hardware", "software", "margin", "competitors", "leadership", "founded",
    "employees", "headquarters", "expansion", "partnership", "regulatory", "safety", "fleet",
    "deployment", "pilot", "retail", "grocery", "throughput", "sensors", "navigation",
    "platform", "subscription",
]  # fmt: skip
OTHER_SCRIPTS = [
    "Компания расширила производство и открыла новый склад в Лидсе",
    "同社は日本市場で物流ロボットの販売を開始した",
    "وسعت الشركة عملياتها في أسواق الشرق الأوسط",
]


def long_report(seed: int = 1) -> Report:
    rng = random.Random(seed)

    def sentence() -> str:
        words = [rng.choice(WORDS) for _ in range(rng.randint(12, 24))]
        cites = "".join(f"[{rng.randint(1, SOURCES)}]" for _ in range(rng.randint(1, 2)))
        return " ".join(words).capitalize() + f" {cites}."

    def paragraph() -> str:
        return " ".join(sentence() for _ in range(rng.randint(3, 6)))

    sections = []
    for index in range(SECTIONS):
        blocks = [paragraph() for _ in range(4)]
        blocks.append("\n".join(f"- **{rng.choice(WORDS)}**: {sentence()}" for _ in range(5)))
        blocks.append(f"{OTHER_SCRIPTS[index % 3]} [{rng.randint(1, SOURCES)}].")
        if index % 4 == 0:
            rows = [f"| {2020 + y} | {rng.randint(5, 90)}M | {sentence()} |" for y in range(5)]
            blocks.append("| Year | Revenue | Note |\n|---|---:|---|\n" + "\n".join(rows))
        if index % 5 == 0:
            blocks.append("```\nrevenue_2024 = 41.5  # GBP millions\n```")
        sections.append(
            Section(heading=f"Section {index + 1}: {rng.choice(WORDS)}", body="\n\n".join(blocks))
        )
    return Report(
        title="Acme Robotics: a long report",
        tldr=paragraph(),
        sections=sections,
        sources=[
            Source(
                url=f"https://source{n}.example/articles/{n}?ref=bench",
                title=f"Source {n}: {' '.join(rng.choice(WORDS) for _ in range(6))}",
                read=n % 3 != 0,
            )
            for n in range(1, SOURCES + 1)
        ],
        created_at=datetime(2026, 3, 2, tzinfo=UTC),
    )


def bench_run() -> RunRecord:
    return RunRecord(
        run_id="bench01",
        topic="Acme Robotics",
        mode=Mode.COMPANY,
        origin=Origin(),
        status=RunStatus.DONE,
        termination_reason="completed",
        created_at=datetime(2026, 3, 2, tzinfo=UTC),
    )


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


def measure(fmt: Format) -> dict[str, float]:
    """In this process: import the format's libraries, then render three times."""
    report, run = long_report(), bench_run()
    importlib.import_module(LIBRARIES.get(fmt, "bot.export.html_doc"))
    before = _rss_mb()
    times, size = [], 0
    for _ in range(3):
        started = time.perf_counter()
        size = len(render(run, report, fmt).data)
        times.append(time.perf_counter() - started)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "lag_ms": asyncio.run(_loop_lag(run, report, fmt)) * 1000,
        "first_s": times[0],
        "median_s": statistics.median(times),
        "peak_mb": peak,
        "added_mb": max(0.0, peak - before),
        "size_kb": size / 1024,
    }


async def _loop_lag(run: RunRecord, report: Report, fmt: Format) -> float:
    """The longest an event loop waited past a 10 ms timer while `export` rendered in its
    worker thread (what a chat bot's acknowledgements would wait)."""
    worst = 0.0
    rendering = asyncio.ensure_future(export(run, report, fmt))
    while not rendering.done():
        started = time.perf_counter()
        await asyncio.sleep(0.01)
        worst = max(worst, time.perf_counter() - started - 0.01)
    await rendering
    return worst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one", choices=[f.value for f in Format], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(Format(args.one))))
        return 0
    report = long_report()
    words = len(render_markdown(report, bench_run(), "completed").split())
    print(f"report: {words:,} words, {len(report.sources)} sources, {SECTIONS} sections")
    for fmt in Format:
        child = [sys.executable, "-m", "bench.export", "--one", fmt.value]
        figures = json.loads(subprocess.run(child, check=True, capture_output=True).stdout)
        print(
            f"{fmt.value:<5} first {figures['first_s']:6.2f} s  median of 3 "
            f"{figures['median_s']:6.2f} s  peak RSS {figures['peak_mb']:6.1f} MB "
            f"(+{figures['added_mb']:5.1f} MB rendering)  file {figures['size_kb']:7.1f} KB  "
            f"loop lag max {figures['lag_ms']:5.1f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
