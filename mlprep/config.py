"""The learner's settings: a small TOML file next to the progress store (data dir, or $MLPREP_HOME).

    editor = "code -w"      # the command that opens an attempt (before $VISUAL and $EDITOR, as git's core.editor)
    auto_edit = true        # `attempt` and `watch` open the editor without --edit

Read with tomllib; written atomically, one `key = value` line per setting, so a hand-edited file
stays readable. Unknown keys are an error naming the file, never silently ignored.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

from mlprep.errors import MlprepError

CONFIG_FILENAME = "config.toml"


@dataclass(frozen=True)
class Setting:
    """One setting of the config file: the type its value must have and the help that `mlprep config` prints."""
    type: type
    help: str


SETTINGS: dict[str, Setting] = {
    "editor": Setting(str, "command that opens an attempt, e.g. 'code -w' (default: $VISUAL, then $EDITOR)"),
    "auto_edit": Setting(bool, "open the editor on `attempt` and `watch` without --edit (true/false)"),
}


def config_path() -> Path:
    from mlprep.workspace import data_dir

    return data_dir() / CONFIG_FILENAME


def setting(key: str) -> Setting:
    if key not in SETTINGS:
        raise MlprepError(f"no setting {key!r}; settings: {', '.join(SETTINGS)}")
    return SETTINGS[key]


def load_config(path: Path | None = None) -> dict[str, str | bool]:
    path = path or config_path()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise MlprepError(f"the config file {path} does not parse ({exc}); fix it or delete it") from None
    for key, value in data.items():
        if key not in SETTINGS:
            raise MlprepError(f"the config file {path} has an unknown setting {key!r}; settings: {', '.join(SETTINGS)}")
        if not isinstance(value, SETTINGS[key].type):
            raise MlprepError(f"the config file {path}: {key} must be a {SETTINGS[key].type.__name__}, not {value!r}")
    return data


def parse_value(key: str, text: str) -> str | bool:
    """A value typed on the command line, as its setting's type."""
    if setting(key).type is bool:
        lowered = text.strip().lower()
        if lowered not in ("true", "false"):
            raise MlprepError(f"{key} is true or false, not {text!r}")
        return lowered == "true"
    return text


def _toml_value(value: str | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def set_value(key: str, value: str | bool | None, path: Path | None = None) -> None:
    """Set `key` (None removes it) and rewrite the file atomically."""
    from mlprep.workspace import atomic_write

    setting(key)
    path = path or config_path()
    data = load_config(path)
    if value is None:
        data.pop(key, None)
    else:
        data[key] = value
    try:
        atomic_write(path, "".join(f"{k} = {_toml_value(v)}\n" for k, v in data.items()))
    except OSError as exc:
        raise MlprepError(f"cannot write the config file {path}: {exc.strerror or exc}") from None
