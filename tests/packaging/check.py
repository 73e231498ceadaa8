"""The packaging check: build the sdist and the wheel, install the wheel (not the source tree) in fresh
virtualenvs, smoke-test it from a directory outside the source tree, and run each framework example in a
virtualenv that has only the wheel with that example's extra, as the README tells users to install it.

    python tests/packaging/check.py                     # everything
    python tests/packaging/check.py smoke langchain     # the build, then only these jobs

Run it with the project's virtualenv (`build` comes with the test-core extra), from any directory.
`python -m build` builds the sdist, then the wheel from that sdist, so the sdist is checked to hold what
a build needs. The wheel's dependencies and the frameworks come from the package index through pip's
cache, so a second run downloads nothing. Each job's output goes to a log file, shown when it fails.
Exits 1 when anything fails.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "mcp_sync"
DISTRIBUTION = "mcp-syncio"
COMMAND = "mcp-sync"

FINAL_ANSWER = "assistant: Your average run was 3.88 miles."
"""The framework examples' last line: the agent used the tool that appeared in the first turn."""


@dataclass(frozen=True)
class Extra:
    """An extra, the example in examples/ that needs only it, and a line the example must print."""

    name: str
    example: str
    marker: str


EXTRAS = (
    Extra("langchain", "langchain_agent.py", FINAL_ANSWER),
    Extra("smolagents", "smolagents_agent.py", FINAL_ANSWER),
    Extra("llamaindex", "llamaindex_agent.py", FINAL_ANSWER),
    Extra("dspy", "dspy_agent.py", FINAL_ANSWER),
    Extra("haystack", "haystack_agent.py", FINAL_ANSWER),
)

WITHOUT_EXAMPLE = ("test-core", "test", "docs", "otel")
"""Extras that hand no framework to an example: the test and documentation tools, telemetry. Any other
extra the wheel provides needs its row in EXTRAS."""

JOBS_AT_ONCE = 2
"""Virtualenvs installed and run side by side: the machine has 2 cores."""
BUILD_TIMEOUT = 600.0
"""Seconds for `python -m build`: two isolated builds, whose first run downloads setuptools."""
INSTALL_TIMEOUT = 900.0
"""Seconds for one `pip install`: a framework's first install downloads it and its dependencies."""
RUN_TIMEOUT = 180.0
"""Seconds for the smoke test or one example: each takes seconds; the rest is room for a busy machine
(and a first run compiles the frameworks' bytecode)."""
LOG_TAIL = 60
"""Lines of a failed job's log that are shown."""


class CheckFailed(Exception):
    """One step of a job failed; the message says which and why."""


@dataclass
class Job:
    """A virtualenv with the wheel (and an extra) installed, and what to run in it."""

    name: str
    requirement: Callable[[Path], str]  # the wheel's path -> what `pip install` gets
    run: Callable[[Path, Path, dict[str, str], Path], None]  # (venv, work dir, env, log) -> None


def run(
    argv: list[str], log: Path, timeout: float, cwd: Path | None = None, env: dict[str, str] | None = None
) -> str:
    """Run a command, its output appended to `log`; its output (stdout and stderr, in order). A non-zero
    exit or a timeout fails."""
    with log.open("a", encoding="utf-8") as out:
        out.write(f"\n$ {' '.join(argv)}\n")
        out.flush()
        start = time.monotonic()
        try:
            done = subprocess.run(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as exc:
            raise CheckFailed(f"`{' '.join(argv)}` did not finish within {timeout:.0f} s") from exc
        out.write(done.stdout)
        out.write(f"(exit {done.returncode}, {time.monotonic() - start:.1f} s)\n")
    if done.returncode != 0:
        raise CheckFailed(f"`{' '.join(argv)}` exited {done.returncode}")
    return done.stdout


def build(dist: Path, log: Path) -> Path:
    """Build the sdist, and the wheel from it; check both; the wheel's path."""
    output = run([sys.executable, "-m", "build", "--outdir", str(dist), str(REPO_ROOT)], log, BUILD_TIMEOUT)
    if "Building wheel from sdist" not in output:
        raise CheckFailed("`python -m build` did not build the wheel from the sdist")
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        raise CheckFailed(f"expected one wheel and one sdist, got {[p.name for p in (*wheels, *sdists)]}")
    check_wheel(wheels[0])
    return wheels[0]


def check_wheel(wheel: Path) -> None:
    """The wheel holds the package (every module of the source tree, and py.typed) and its metadata only,
    under the distribution's name, with the command."""
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = next((n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA")), None)
        if info is None:
            raise CheckFailed("the wheel has no METADATA")
        metadata = archive.read(f"{info}/METADATA").decode()
        has_entry_points = f"{info}/entry_points.txt" in names
        entry_points = archive.read(f"{info}/entry_points.txt").decode() if has_entry_points else ""
    if f"Name: {DISTRIBUTION}\n" not in metadata:
        raise CheckFailed(f"the wheel's METADATA does not name {DISTRIBUTION}")
    provided = {
        line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Provides-Extra:")
    }
    missing_extras = sorted({extra.name for extra in EXTRAS} - provided)
    if missing_extras:
        raise CheckFailed(f"the wheel does not provide the extras {missing_extras}")
    unchecked = sorted(provided - {extra.name for extra in EXTRAS} - set(WITHOUT_EXAMPLE))
    if unchecked:
        raise CheckFailed(
            f"no example checks the extras {unchecked}: add them to EXTRAS (or WITHOUT_EXAMPLE)"
        )
    if f"{COMMAND} = {PACKAGE}._cli:main" not in entry_points:
        raise CheckFailed(f"the wheel has no `{COMMAND}` command")
    outside = sorted({n.split("/")[0] for n in names} - {PACKAGE, info})
    if outside:
        raise CheckFailed(f"the wheel holds more than {PACKAGE}/ and its metadata: {outside}")
    sources = {
        path.relative_to(REPO_ROOT).as_posix()
        for path in (REPO_ROOT / PACKAGE).rglob("*")
        if path.is_file() and (path.suffix == ".py" or path.name == "py.typed")
    }
    if f"{PACKAGE}/py.typed" not in sources:
        raise CheckFailed(f"the source tree has no {PACKAGE}/py.typed")
    lost = sorted(sources - names)
    if lost:
        raise CheckFailed(f"the wheel lacks files of the source tree: {lost}")


def make_venv(path: Path, requirement: str, log: Path) -> dict[str, str]:
    """A fresh virtualenv with `requirement` installed; the environment of a shell that activated it."""
    run([sys.executable, "-m", "venv", "--without-pip", str(path)], log, RUN_TIMEOUT)
    python = str(path / "bin" / "python")
    # The running pip installs into the new environment, which then holds only what was asked for.
    # No byte-compiling of every installed module: the run compiles what it imports, at a fraction of the CPU.
    pip = [sys.executable, "-m", "pip", "--python", python]
    run([*pip, "install", "--progress-bar", "off", "--no-compile", requirement], log, INSTALL_TIMEOUT)
    run([*pip, "check"], log, RUN_TIMEOUT)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["VIRTUAL_ENV"] = str(path)
    env["PATH"] = os.pathsep.join([str(path / "bin"), env.get("PATH", "")])
    return env


def smoke(venv: Path, work: Path, env: dict[str, str], log: Path) -> None:
    """tests/packaging/smoke.py, run from a directory that holds only it and the demo server."""
    for name in (REPO_ROOT / "tests" / "packaging" / "smoke.py", REPO_ROOT / "examples" / "demo_server.py"):
        shutil.copy(name, work)
    run([str(venv / "bin" / "python"), "smoke.py", "demo_server.py"], log, RUN_TIMEOUT, cwd=work, env=env)


def example(extra: Extra) -> Callable[[Path, Path, dict[str, str], Path], None]:
    """Run the extra's example from a copy of examples/ (its config names `python` and relative paths)."""

    def run_example(venv: Path, work: Path, env: dict[str, str], log: Path) -> None:
        shutil.copytree(
            REPO_ROOT / "examples", work / "examples", ignore=shutil.ignore_patterns("__pycache__")
        )
        argv = [str(venv / "bin" / "python"), f"examples/{extra.example}"]
        output = run(argv, log, RUN_TIMEOUT, cwd=work, env=env)
        if extra.marker not in output.splitlines():
            raise CheckFailed(f"examples/{extra.example} did not print {extra.marker!r}")

    return run_example


def all_jobs() -> list[Job]:
    jobs = [Job("smoke", str, smoke)]
    jobs += [Job(extra.name, with_extra(extra), example(extra)) for extra in EXTRAS]
    return jobs


def with_extra(extra: Extra) -> Callable[[Path], str]:
    """The requirement `WHEEL[extra]`."""
    return lambda wheel: f"{wheel}[{extra.name}]"


def do_job(job: Job, wheel: Path, root: Path) -> tuple[str, float, str | None]:
    """Run one job in a directory of its own; (name, seconds, the failure or None)."""
    start = time.monotonic()
    home = root / job.name
    work = home / "work"
    work.mkdir(parents=True)
    log = home / "log.txt"
    try:
        env = make_venv(home / "venv", job.requirement(wheel), log)
        job.run(home / "venv", work, env, log)
    except (CheckFailed, OSError) as exc:
        return job.name, time.monotonic() - start, f"{exc}\n{tail(log)}"
    return job.name, time.monotonic() - start, None


def tail(log: Path) -> str:
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines() if log.exists() else []
    return "\n".join(f"    {line}" for line in lines[-LOG_TAIL:])


def main() -> int:
    jobs = all_jobs()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = [job.name for job in jobs]
    parser.add_argument("only", nargs="*", metavar="JOB", help=f"run only these jobs, of {', '.join(names)}")
    parser.add_argument("--keep", action="store_true", help="keep the build and the virtualenvs")
    args = parser.parse_args()
    unknown = sorted(set(args.only) - set(names))
    if unknown:
        parser.error(f"no job named {', '.join(unknown)}")
    jobs = [job for job in jobs if not args.only or job.name in args.only]

    root = Path(tempfile.mkdtemp(prefix=f"{DISTRIBUTION}-packaging-"))
    results: list[tuple[str, float, str | None]] = []
    start = time.monotonic()
    try:
        log = root / "build.txt"
        try:
            wheel = build(root / "dist", log)
        except CheckFailed as exc:
            results.append(("build", time.monotonic() - start, f"{exc}\n{tail(log)}"))
        else:
            results.append(("build", time.monotonic() - start, None))
            print(f"packaging: built {wheel.name} and its sdist ({results[-1][1]:.0f} s)", flush=True)
            with ThreadPoolExecutor(max_workers=JOBS_AT_ONCE) as pool:
                for name, seconds, failure in pool.map(lambda job: do_job(job, wheel, root), jobs):
                    results.append((name, seconds, failure))
                    print(f"packaging: {name}: {'FAILED' if failure else 'ok'} ({seconds:.0f} s)", flush=True)
    finally:
        failed = [(name, failure) for name, _, failure in results if failure]
        for name, failure in failed:
            print(f"\npackaging: {name} FAILED: {failure}", file=sys.stderr)
        if args.keep or failed:
            print(f"packaging: the build, virtualenvs and logs are in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    print(f"packaging: took {time.monotonic() - start:.0f} s")
    print(f"packaging: {len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
