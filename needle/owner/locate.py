"""The few settings a thin client needs (data folder, store, owner), read without pydantic.

`needle.core.settings.load_settings` validates the whole configuration with pydantic-settings, which costs a
third of a second to import: more than a search through a running owner takes. A command that will only
talk to the owner needs four values; this module reads them from the same sources in the same order (the
repository's `config/needle.yml`, the file named by `NEEDLE_CONFIG`, then `NEEDLE_<SECTION>__<KEY>`
variables). Anything it cannot read plainly makes it answer `None`, and the caller loads the full settings.
What it read from the files is kept in the user's cache folder (`~/.cache/needle/located.json`) until a
file changes, so that a command does not import PyYAML to find its owner.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CONFIG_FILE = PROJECT_ROOT / "config" / "needle.yml"
CONFIG_ENV = "NEEDLE_CONFIG"
CACHE_FILE = "located.json"
CACHE_ENTRIES = 8
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


class Location(NamedTuple):
    """Where a user's index lives and how commands reach its owner (a subset of `needle.core.settings.Settings`)."""

    data_dir: Path
    store_url: str | None
    autostart: bool
    idle_minutes: float
    answer_timeout: float

    @property
    def index_dir(self) -> Path:
        """Folder of the embedded index."""
        return self.data_dir / "index"

    @classmethod
    def of(cls, settings: Any) -> Location:
        """The location that full settings (`needle.core.settings.Settings`) name."""
        owner = settings.owner
        return cls(settings.data_dir, settings.store.url, owner.autostart, owner.idle_minutes, owner.answer_timeout)


def locate_or_load() -> Location:
    """The location, from the full settings when `locate` cannot read it plainly (raises `ConfigError` then)."""
    location = locate()
    if location is not None:
        return location
    from needle.core.settings import load_settings

    return Location.of(load_settings())


def locate(env: Mapping[str, str] | None = None) -> Location | None:
    """
    The data folder, store URL and owner settings, as `load_settings` would read them.

    :param env: The environment; `os.environ` when not given.
    :returns: The location, or `None` when a source holds something only the full settings can judge (a file
        that does not parse, a value of the wrong type, JSON section variables): the caller then loads those.
    """
    env = os.environ if env is None else env
    values: dict[str, Any] = {
        "data_dir": "~/.local/share/needle",
        "store.url": None,
        "owner.autostart": True,
        "owner.idle_minutes": 15.0,
        "owner.answer_timeout": 10.0,
    }
    files = [DEFAULT_CONFIG_FILE] if DEFAULT_CONFIG_FILE.exists() else []
    if env.get(CONFIG_ENV):
        files.append(Path(env[CONFIG_ENV]).expanduser())
    found = _file_values(files, values, env)
    if found is None:
        return None
    values.update(found)
    if any(k in env for k in ("NEEDLE_STORE", "NEEDLE_OWNER")):
        return None  # a whole section as JSON: pydantic-settings' decoding is the one to trust
    for key in list(values):
        name = "NEEDLE_" + key.upper().replace(".", "__")
        if name in env:
            values[key] = None if env[name] == "null" else env[name]
    try:
        autostart = _boolean(values["owner.autostart"])
        idle, answer = float(values["owner.idle_minutes"]), float(values["owner.answer_timeout"])
    except (TypeError, ValueError):
        return None
    url = values["store.url"]
    if (
        autostart is None
        or idle <= 0
        or answer <= 0
        or not isinstance(values["data_dir"], str)
        or not (url is None or isinstance(url, str))
    ):
        return None
    data_dir = Path(os.path.expandvars(values["data_dir"])).expanduser()
    return Location(data_dir, url or None, autostart, idle, answer)


def _cache_file(env: Mapping[str, str]) -> Path:
    """Where the values read from the configuration files are kept, with the files' stat they were read at."""
    base = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache")
    return Path(base) / "needle" / CACHE_FILE


def _file_values(files: list[Path], defaults: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any] | None:
    """
    The values of `defaults`' keys that the configuration files set, on top of `defaults`; `None` when a file
    cannot be read plainly. Reading YAML costs a command sent to an owner a fifth of its start-up (PyYAML's
    import and parse), so what was read is kept in the user's cache folder, keyed by the files' paths, inodes,
    sizes and modification times, and read again only when one of them changes.
    """
    try:
        stats: list[list[Any]] | None = [_stat(file) for file in files]
    except OSError:
        stats = None
    cache, key = _cache_file(env), "\n".join(str(file) for file in files)
    entries = _read_cache(cache) if stats is not None else {}
    kept = entries.get(key)
    if isinstance(kept, dict) and kept.get("files") == stats and set(kept.get("values") or {}) <= set(defaults):
        return {**defaults, **kept["values"]} if kept.get("readable") else None
    values = dict(defaults)
    readable = all(_merge_file(values, file) for file in files)
    if stats is not None:
        changed = {name: value for name, value in values.items() if value != defaults[name]}
        others = {k: v for k, v in entries.items() if k != key}
        kept_others = dict(list(others.items())[-(CACHE_ENTRIES - 1) :])  # one entry per set of files, a few sets
        _write_cache(cache, {**kept_others, key: {"files": stats, "readable": readable, "values": changed}})
    return values if readable else None


def _stat(file: Path) -> list[Any]:
    info = file.stat()
    return [str(file), info.st_ino, info.st_size, info.st_mtime_ns]


def _read_cache(path: Path) -> dict[str, Any]:
    """The kept values by set of files, when the file is the user's own and nobody else may write it."""
    import json
    import stat

    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
                return {}
            kept = json.loads(handle.read())
    except (OSError, ValueError):
        return {}
    return kept if isinstance(kept, dict) else {}


def _write_cache(path: Path, kept: dict[str, Any]) -> None:
    """Keep the values (atomically, mode 0600); a folder that cannot be written leaves them unkept."""
    import json

    from needle.core.atomic import write_atomic

    try:
        text = json.dumps(kept)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text, mode=0o600)
    except (OSError, TypeError, ValueError):
        pass


def _merge_file(values: dict[str, Any], file: Path) -> bool:
    """Take the file's values for the keys of `values`; False when it cannot be read as a mapping."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser when PyYAML has it: 10x faster
    try:
        data = yaml.load(file.read_text(encoding="utf-8"), Loader=loader) or {}
    except (OSError, yaml.YAMLError):
        return False
    if not isinstance(data, dict):
        return False
    for key in values:
        section, _, name = key.rpartition(".")
        holder = data.get(section) if section else data
        if section and holder is not None and not isinstance(holder, dict):
            return False
        if isinstance(holder, dict) and name in holder:
            values[key] = holder[name]
    return True


def _boolean(value: Any) -> bool | None:
    """A boolean as pydantic reads one from YAML or the environment; `None` when it is not one."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    return True if text in _TRUE else False if text in _FALSE else None


__all__ = ["Location", "locate", "locate_or_load"]
