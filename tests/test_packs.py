"""Exercise packs: a pip-installable package adds exercises through the `mlprep.banks` entry point
group; $MLPREP_BANK may name several folders; ids stay unique. The example pack under
tests/fixtures/example_pack is really built and installed (pip --target, no network), then listed,
attempted, graded and self-checked by mlprep in fresh processes, as a pack author's CI would."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACK = REPO / "tests" / "fixtures" / "example_pack"


@pytest.fixture(scope="module")
def installed_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example pack installed into a folder of its own: its path (to put on PYTHONPATH)."""
    work = tmp_path_factory.mktemp("pack")
    source = work / "source"
    shutil.copytree(PACK, source)  # pip builds in the source folder: keep the fixture clean
    target = work / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(target), str(source)],
                   check=True, timeout=300, capture_output=True)
    return target


def mlprep(*args: str, home: Path, pythonpath: Path | None = None, bank: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "MLPREP_HOME": str(home), "COLUMNS": "200", "PYTHONPATH": os.pathsep.join(str(p) for p in (pythonpath, REPO) if p)}
    env.pop("MLPREP_BANK", None)
    if bank is not None:
        env["MLPREP_BANK"] = bank
    return subprocess.run([sys.executable, "-m", "mlprep", *args], capture_output=True, text=True, env=env, timeout=300)


def test_an_installed_pack_is_listed_attempted_graded_and_self_checked(installed_pack: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    before = mlprep("list", "--json", home=home)
    assert "double-it" not in before.stdout  # not installed where this interpreter looks
    listed = mlprep("list", "--pack", "example", home=home, pythonpath=installed_pack)
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()[2:]] == ["double-it"]
    everything = json.loads(mlprep("list", "--json", home=home, pythonpath=installed_pack).stdout)
    packs = {row["id"]: row["pack"] for row in everything}
    assert packs["double-it"] == "example" and packs["adamw"] == "mlprep"  # beside the built-in bank

    attempted = mlprep("attempt", "double-it", home=home, pythonpath=installed_pack)
    assert attempted.returncode == 0, attempted.stderr
    attempt = home / "workspace" / "double-it" / "double_it.py"
    assert "raise NotImplementedError" in attempt.read_text()
    attempt.write_text("def double(x):\n    return x * 2\n")
    graded = mlprep("grade", "double-it", "--json", home=home, pythonpath=installed_pack)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    assert json.loads(graded.stdout)["status"] == "pass"

    checked = mlprep("selfcheck", "--bank", str(installed_pack / "mlprep_example_pack"), "--json", home=home)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    report = json.loads(checked.stdout)
    assert [e["id"] for e in report["exercises"]] == ["double-it"] and report["ok"]


def test_mlprep_bank_names_several_folders_and_ids_stay_unique(installed_pack: Path, tmp_path: Path) -> None:
    fixture_bank = REPO / "tests" / "fixtures" / "bank"
    pack_bank = installed_pack / "mlprep_example_pack"
    both = mlprep("list", "--json", home=tmp_path, bank=os.pathsep.join([str(fixture_bank), str(pack_bank)]))
    assert both.returncode == 0, both.stderr
    assert sorted((row["id"], row["pack"]) for row in json.loads(both.stdout)) == [
        ("add-one", "bank"), ("double-it", "mlprep_example_pack"), ("reverse-words", "bank")]

    copy = tmp_path / "another-bank"
    shutil.copytree(fixture_bank, copy)
    clash = mlprep("list", home=tmp_path, bank=os.pathsep.join([str(fixture_bank), str(copy)]))
    assert clash.returncode == 2
    assert clash.stderr.strip().splitlines() == [
        f"mlprep: error: exercise id 'add-one' is in two banks: the pack 'bank' ({fixture_bank}) and the pack 'another-bank' ({copy}); "
        "ids must be unique: rename one, or uninstall one of the packs"]
    unknown = mlprep("list", "--pack", "nope", home=tmp_path, bank=str(fixture_bank))
    assert unknown.returncode == 2 and "no pack 'nope'; the packs in use: bank" in unknown.stderr


def test_a_pack_installed_later_is_found_though_the_packs_are_cached(installed_pack: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    home = tmp_path / "home"
    assert "double-it" not in mlprep("list", home=home, pythonpath=site).stdout  # caches: no packs on this path
    assert (home / "cache" / "packs.json").is_file()
    shutil.copytree(installed_pack, site, dirs_exist_ok=True)  # installed there afterwards: the folder changes
    assert "double-it" in mlprep("list", home=home, pythonpath=site).stdout
