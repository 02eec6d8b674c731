"""Shared fixtures. Every test gets its own MLPREP_HOME (progress store, default workspace), like
simonw/llm's autouse LLM_USER_PATH fixture: no test reads or writes the user's real data."""

from __future__ import annotations

from pathlib import Path

import pytest

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


@pytest.fixture(scope="session")
def bank_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One data folder for the tests that grade the whole real bank (the self-check, the diagnosis):
    what one of them learns (reference times, the known mistakes' grades) the next one reuses. Each
    still works alone, only slower: a cache, never a dependency."""
    return tmp_path_factory.mktemp("bank-cache-home")
