from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from mlprep import workspace
from mlprep.errors import MlprepError


def test_data_dir_and_workspace_follow_mlprep_home(mlprep_home: Path) -> None:
    assert workspace.data_dir() == mlprep_home
    assert workspace.store_path() == mlprep_home / "progress.sqlite3"
    assert workspace.default_workspace() == mlprep_home / "workspace"


def test_defaults_without_mlprep_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import platformdirs

    monkeypatch.delenv("MLPREP_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert workspace.data_dir() == Path(platformdirs.user_data_dir("mlprep", appauthor=False))
    assert workspace.default_workspace() == tmp_path / "mlprep"


def test_attempt_path_is_an_importable_module_name(tmp_path: Path) -> None:
    assert workspace.attempt_path(tmp_path, "focal-loss") == tmp_path / "focal-loss" / "focal_loss.py"
    assert workspace.attempt_path(tmp_path, "kmeans-edge", "_answers.toml").name == "kmeans_edge_answers.toml"


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_atomic_write_replaces_and_keeps_permissions(tmp_path: Path) -> None:
    target = tmp_path / "a" / "f.py"
    workspace.atomic_write(target, "one\n")
    assert target.read_text() == "one\n"
    os.chmod(target, 0o640)
    workspace.atomic_write(target, "two ✓\n")
    assert target.read_text(encoding="utf-8") == "two ✓\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert _leftovers(target.parent) == []


def test_atomic_write_failure_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "f.py"
    target.write_text("the learner's work\n")

    def broken_replace(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(workspace.os, "replace", broken_replace)
    with pytest.raises(OSError):
        workspace.atomic_write(target, "stub\n")
    assert target.read_text() == "the learner's work\n"
    assert _leftovers(tmp_path) == []


def test_atomic_create_never_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "w" / "f.py"
    workspace.atomic_create(target, "first\n")
    with pytest.raises(FileExistsError):
        workspace.atomic_create(target, "second\n")
    assert target.read_text() == "first\n"
    assert _leftovers(target.parent) == []


def test_atomic_create_without_hard_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_links(src: object, dst: object) -> None:
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(workspace.os, "link", no_links)
    target = tmp_path / "f.py"
    workspace.atomic_create(target, "x = 1\n")
    assert target.read_text() == "x = 1\n"
    with pytest.raises(FileExistsError):
        workspace.atomic_create(target, "x = 2\n")
    assert target.read_text() == "x = 1\n"
    assert _leftovers(tmp_path) == []


def test_backups_are_exact_and_never_overwrite_each_other(tmp_path: Path) -> None:
    target = tmp_path / "focal_loss.py"
    content = b"def f():\n    return '\xff not utf-8'\n"
    target.write_bytes(content)
    first = workspace.backup_file(target)
    second = workspace.backup_file(target)  # same second: must still get its own name
    assert first != second
    assert first.parent == second.parent == tmp_path / "backups"
    assert first.read_bytes() == content and second.read_bytes() == content
    assert first.name.startswith("focal_loss.") and first.suffix == ".py"
    assert target.read_bytes() == content


def test_editor_command_prefers_the_setting_then_visual_and_splits_like_a_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    assert workspace.editor_command() is None
    monkeypatch.setenv("EDITOR", "nano -w")
    assert workspace.editor_command() == (["nano", "-w"], "$EDITOR")
    monkeypatch.setenv("VISUAL", "'/opt/my editor/bin/code' --wait")
    assert workspace.editor_command() == (["/opt/my editor/bin/code", "--wait"], "$VISUAL")
    assert workspace.editor_command("code -w") == (["code", "-w"], "the editor setting")
    assert workspace.editor_command("  ") == (["/opt/my editor/bin/code", "--wait"], "$VISUAL")
    monkeypatch.setenv("VISUAL", "'unclosed")
    with pytest.raises(MlprepError, match="VISUAL"):
        workspace.editor_command()


def test_open_in_editor_runs_the_editor_on_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "fake editor.py"
    script.write_text("import sys\nopen(sys.argv[-1], 'a').write('# edited\\n')\n")
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", f"'{sys.executable}' '{script}'")
    target = tmp_path / "f.py"
    target.write_text("x = 1\n")
    assert workspace.open_in_editor(target) == 0
    assert target.read_text() == "x = 1\n# edited\n"


def test_open_in_editor_errors_are_one_line_and_name_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    target = tmp_path / "f.py"
    with pytest.raises(MlprepError, match=r"\$VISUAL or \$EDITOR") as no_editor:
        workspace.open_in_editor(target)
    assert str(target) in no_editor.value.message
    monkeypatch.setenv("EDITOR", "surely-no-such-editor-exists")
    with pytest.raises(MlprepError, match="surely-no-such-editor-exists") as missing:
        workspace.open_in_editor(target)
    assert "\n" not in missing.value.message


def test_a_typo_suggests_what_it_is_a_typo_of_and_nothing_unrelated() -> None:
    from mlprep.text import suggestions

    known = ["loss-scaling", "prod-vs-staging", "kmeans", "kmeans-edge", "gqa-attention", "lora-gqa", "mlp-backprop", "batchnorm", "minibatch-sgd"]
    assert suggestions("los-scaling", known) == ["loss-scaling"]  # not prod-vs-staging, which shares "-s..ing"
    assert suggestions("kmean", known) == ["kmeans", "kmeans-edge"]
    assert sorted(suggestions("gqa", known)) == ["gqa-attention", "lora-gqa"]
    assert suggestions("mlp", known) == ["mlp-backprop"] and suggestions("batch-norm", known) == ["batchnorm"]
    assert suggestions("xyzzy", known) == []
