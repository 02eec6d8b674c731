"""Shared fixtures. Every test gets its own MLPREP_HOME (progress store, default workspace), like
simonw/llm's autouse LLM_USER_PATH fixture: no test reads or writes the user's real data."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

FIXTURE_BANK = Path(__file__).parent / "fixtures" / "bank"


@pytest.fixture(autouse=True)
def mlprep_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "mlprep-home"
    monkeypatch.setenv("MLPREP_HOME", str(home))
    return home


@pytest.fixture
def fixture_bank(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The tiny pure-Python bank under tests/fixtures/bank (add-one, reverse-words), via MLPREP_BANK."""
    monkeypatch.setenv("MLPREP_BANK", str(FIXTURE_BANK))
    return FIXTURE_BANK


# -- the self-check of the whole bank, in the background ---------------------------------------------
#
# It takes minutes, so it starts the moment the tests are collected, as a process of its own, and the
# tests that read it (tests/test_bank.py) run last and wait for that process to end. So do the tests
# that grade the whole real bank again (the diagnosis: every known mistake's grades), so that they
# reuse what it learned (the data folder's caches) rather than grade it all twice.
# Run alone, each of them still works: the self-check starts when it is asked for, and the
# diagnosis, with nothing to wait for, learns what it needs itself.

WHOLE_BANK = "whole_bank_selfcheck"
BANK_CACHE = "bank_cache_home"
_background = pytest.StashKey["WholeBankSelfCheck"]()


class WholeBankSelfCheck:
    """`mlprep selfcheck --verbose --report R` over the whole bank, running in `folder`."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.home, self.report = folder, folder / "home", folder / "report.json"
        self.out, self.err = (folder / "stdout.txt").open("w"), (folder / "stderr.txt").open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mlprep", "selfcheck", "--verbose", "--report", str(self.report)], cwd=REPO, stdout=self.out, stderr=self.err,
            env={**os.environ, "COLUMNS": "200", "MLPREP_HOME": str(self.home)},
        )

    def wait(self) -> subprocess.CompletedProcess:
        """Its process, once it has ended (at most 25 minutes, however loaded the machine)."""
        try:
            self.process.wait(timeout=1500)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for stream in (self.out, self.err):
            stream.close()
        return subprocess.CompletedProcess(self.process.args, self.process.returncode, (self.folder / "stdout.txt").read_text(),
                                           (self.folder / "stderr.txt").read_text())

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def _uses(item: pytest.Item, fixture: str) -> bool:
    return fixture in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that wait for the self-check, last, while it runs beside the rest (a stable sort: the
    others keep their order)."""
    items.sort(key=lambda item: _uses(item, BANK_CACHE) or _uses(item, WHOLE_BANK))


def pytest_collection_finish(session: pytest.Session) -> None:
    if not session.config.option.collectonly and any(_uses(item, WHOLE_BANK) for item in session.items):
        session.config.stash[_background] = WholeBankSelfCheck(Path(tempfile.mkdtemp(prefix="mlprep-whole-bank-")))


def pytest_unconfigure(config: pytest.Config) -> None:
    if _background in config.stash:
        config.stash[_background].stop()


@pytest.fixture(scope="session")
def whole_bank_selfcheck(request: pytest.FixtureRequest) -> tuple[subprocess.CompletedProcess, dict | None]:
    """The whole bank's self-check (its process, the report with every grade), once it has ended."""
    if _background not in request.config.stash:
        request.config.stash[_background] = WholeBankSelfCheck(Path(tempfile.mkdtemp(prefix="mlprep-whole-bank-")))
    run = request.config.stash[_background]
    process = run.wait()
    return process, json.loads(run.report.read_text()) if run.report.exists() else None


@pytest.fixture(scope="session")
def bank_cache_home(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The data folder of the tests that grade the whole real bank: the self-check's, once it has ended,
    when it runs in this session (what it learned, reference times and the known mistakes' grades, is
    reused), else a fresh one. A cache, never a dependency."""
    if _background in request.config.stash:
        request.getfixturevalue(WHOLE_BANK)
        return request.config.stash[_background].home
    return tmp_path_factory.mktemp("bank-cache-home")
