"""Running the real `mlprep` CLI in a subprocess, and cleaning up after it: shared by the tests of
hostile submissions, concurrency and crashes (tests/test_hostile.py, tests/test_hardening.py)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
RUNNER_BANK = FIXTURES / "runner_bank"


def mlprep_env(home: Path, bank: Path = RUNNER_BANK) -> dict[str, str]:
    return {**os.environ, "MLPREP_HOME": str(home), "MLPREP_BANK": str(bank), "COLUMNS": "200"}


def start_mlprep(args: list[str], home: Path, *, bank: Path = RUNNER_BANK, cwd: Path | None = None) -> subprocess.Popen:
    """`python -m mlprep ARGS` in its own process group, so a test can kill it and all it started in that group."""
    return subprocess.Popen(
        [sys.executable, "-m", "mlprep", *args], env=mlprep_env(home, bank), cwd=cwd or home.parent,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )


def run_mlprep(args: list[str], home: Path, *, bank: Path = RUNNER_BANK, bound_s: float = 60.0) -> tuple[int | None, str, str, float]:
    """Run the CLI; past `bound_s` its process group and whatever it left running are killed (returncode None)."""
    started = time.monotonic()
    process = start_mlprep(args, home, bank=bank)
    try:
        stdout, stderr = process.communicate(timeout=bound_s)
        returncode: int | None = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        returncode = None
        kill_processes_of(home)
    return returncode, stdout, stderr, time.monotonic() - started


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie (exited, not yet reaped by an init that does not reap) is gone too
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z"
    except OSError:
        return True


def processes_naming(path: Path) -> list[int]:
    """Live processes whose command line contains `path` (a submission that exec'd a marker)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and str(path).encode() in (entry / "cmdline").read_bytes() and not gone(int(entry.name)):
                found.append(int(entry.name))
        except OSError:
            continue  # exited meanwhile
    return found


def wait_until(condition, what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s:g} s"
        time.sleep(0.05)


def processes_of(home: Path) -> list[int]:
    """Live processes started for this test's MLPREP_HOME (mlprep, its sandboxes, their children)."""
    marker = f"MLPREP_HOME={home}\0".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if marker in (entry / "environ").read_bytes() and not gone(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue  # exited meanwhile, or not ours to read
    return found


def kill_processes_of(home: Path) -> list[int]:
    """Kill what a test's mlprep left running (by pid; nothing else) and return those pids."""
    left = processes_of(home)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


def integrity(store_file: Path) -> list[tuple[str]]:
    """PRAGMA integrity_check of the store: [("ok",)] when it is sound."""
    db = sqlite3.connect(store_file)
    try:
        return db.execute("PRAGMA integrity_check").fetchall()
    finally:
        db.close()
