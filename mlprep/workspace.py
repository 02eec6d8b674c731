"""Where mlprep keeps things on disk, and how it writes them without losing the learner's work.

- data dir: the progress store lives here; `platformdirs.user_data_dir("mlprep")`, or $MLPREP_HOME.
- workspace: the learner's attempts, `<workspace>/<id>/<id with - as _>.py`; default ~/mlprep, or
  $MLPREP_HOME/workspace when MLPREP_HOME is set; `--workspace DIR` overrides both.

Every write to the workspace is atomic (a temporary file in the same folder, then os.replace or
os.link), so a crash or a full disk leaves either the old file or the new one, never half of one.
This module must stay light: `mlprep attempt` and friends import it.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path

from mlprep.errors import MlprepError

HOME_ENV = "MLPREP_HOME"
STORE_FILENAME = "progress.sqlite3"
BACKUP_DIRNAME = "backups"


def data_dir() -> Path:
    """Where the progress store lives: $MLPREP_HOME when set, else the platform's user data dir."""
    override = os.environ.get(HOME_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs  # only the commands that touch the store need it

    return Path(platformdirs.user_data_dir("mlprep", appauthor=False))


def store_path() -> Path:
    return data_dir() / STORE_FILENAME


def default_workspace() -> Path:
    """$MLPREP_HOME/workspace when MLPREP_HOME is set (tests, sandboxes), else ~/mlprep: a folder the
    learner can find and open in an editor, unlike the hidden platform data dir."""
    override = os.environ.get(HOME_ENV)
    if override:
        return Path(override).expanduser() / "workspace"
    return Path.home() / "mlprep"


def attempt_path(workspace: Path, exercise_id: str, suffix: str = ".py") -> Path:
    """Where an attempt goes: <workspace>/<id>/<id with _><suffix>, its kind's suffix (code: .py, a quiz's
    answers file: _answers.toml, a story: .md). An importable module name: the learner may want to
    `import focal_loss` from a notebook."""
    return Path(workspace).expanduser() / exercise_id / (exercise_id.replace("-", "_") + suffix)


def _as_bytes(content: str | bytes) -> bytes:
    return content.encode("utf-8") if isinstance(content, str) else content


def _write_temp(folder: Path, name: str, content: str | bytes, mode: int) -> Path:
    """Write `content` to a new temporary file in `folder` (same file system as the target), fsynced."""
    import tempfile  # lazily: the quick commands never write

    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(_as_bytes(content))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def _default_mode() -> int:
    # mkstemp creates 0600; a learner's file should get the permissions any new file would.
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # not supported on this platform / file system; the rename is still atomic
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, content: str | bytes) -> None:
    """Replace (or create) `path` with `content` (str: written as UTF-8) atomically, keeping an existing file's permissions."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = (path.stat().st_mode & 0o777) if path.exists() else _default_mode()
    tmp = _write_temp(path.parent, path.name, content, mode)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def atomic_create(path: Path, content: str | bytes) -> None:
    """Create `path` with `content` (str: written as UTF-8) atomically; raise FileExistsError if it exists, even if another
    process creates it between our check and our write (os.link never replaces its target)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        raise FileExistsError(str(path))
    tmp = _write_temp(path.parent, path.name, content, _default_mode())
    try:
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise
        except OSError:
            # A file system without hard links (some network and FAT mounts): check-then-replace
            # leaves a tiny race window, acceptable for a single learner's workspace.
            if path.exists():
                raise FileExistsError(str(path)) from None
            os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    _fsync_dir(path.parent)


def own_folder(folder: Path) -> Path:
    """`folder`, made if it is missing; refused when it is a symbolic link (or not a folder): what mlprep
    writes beside an attempt (backups, repro scripts) never follows a link out of the attempt's folder."""
    folder = Path(folder)
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise MlprepError(f"{folder} is a symbolic link or not a folder: mlprep writes only into a folder of its own there; move it away and retry")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def fresh_folder(parent: Path) -> Path:
    """A new folder in `parent` (an own_folder), named by the UTC time: nothing in it but what this run writes."""
    parent = own_folder(parent)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for n in range(1000):
        candidate = parent / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            continue
    raise MlprepError(f"could not find a free folder name in {parent}; clean it up and retry")


def backup_file(path: Path) -> Path:
    """Copy `path` to `<its folder>/backups/<stem>.<UTC time><suffix>` and return the copy's path.
    Never overwrites an earlier backup, never writes through a link."""
    path = Path(path)
    content = path.read_bytes()  # bytes: a backup is exact, whatever the encoding
    folder = own_folder(path.parent / BACKUP_DIRNAME)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for n in range(1000):
        tag = stamp if n == 0 else f"{stamp}-{n}"
        candidate = folder / f"{path.stem}.{tag}{path.suffix}"
        try:
            atomic_create(candidate, content)
            return candidate
        except FileExistsError:
            continue
    raise MlprepError(f"could not find a free backup name in {folder}; clean it up and retry")


def latest_backup(path: Path) -> Path | None:
    """The newest backup of `path` that backup_file made, or None."""
    path = Path(path)
    pattern = re.compile(rf"^{re.escape(path.stem)}\.(\d{{8}}T\d{{6}}Z)(?:-(\d+))?{re.escape(path.suffix)}$")
    found = []
    for candidate in (path.parent / BACKUP_DIRNAME).glob(f"{path.stem}.*{path.suffix}"):
        match = pattern.match(candidate.name)
        if match:
            found.append(((match.group(1), int(match.group(2) or 0)), candidate))
    return max(found)[1] if found else None


def editor_command(configured: str | None = None) -> tuple[list[str], str] | None:
    """The learner's editor and where it came from: the `editor` setting (mlprep config), then
    $VISUAL, then $EDITOR, split like a shell would ("code -w")."""
    candidates = [("the editor setting", configured)] + [(f"${name}", os.environ.get(name)) for name in ("VISUAL", "EDITOR")]
    for origin, value in candidates:
        value = (value or "").strip()
        if value:
            try:
                import shlex

                command = shlex.split(value)
            except ValueError as exc:
                raise MlprepError(f"{origin} ({value!r}) does not parse as a command: {exc}") from None
            if command:
                return command, origin
    return None


def open_in_editor(path: Path, configured: str | None = None) -> int:
    """Open `path` in the learner's editor and wait for it; return the editor's exit status."""
    found = editor_command(configured)
    if found is None:
        raise MlprepError(
            f"no editor configured: set $VISUAL or $EDITOR (e.g. `export EDITOR=nano`) or `mlprep config editor 'code -w'`, or open {path} yourself"
        )
    command, origin = found
    try:
        import subprocess

        return subprocess.call([*command, str(path)])
    except FileNotFoundError:
        raise MlprepError(f"editor {command[0]!r} not found (from {origin}); fix it, or open {path} yourself") from None
    except PermissionError:
        raise MlprepError(f"editor {command[0]!r} is not executable (from {origin}); open {path} yourself") from None
