"""Where Needle finds its own files: the YAML graphs, the default configuration and the endpoint wrappers.

In a clone they are the top-level `pipelines/`, `config/` and `server/pipelines/`, the layout hayhooks and the
style guide expect; an editable install and `PYTHONPATH` read them there. A wheel (`pip install .`,
`pipx install .`) has no clone beside it, so its build copies the same three folders into the package as
`needle/_data/` (setup.py): the clone's folders stay the one source, and an installed Needle prefers its copy.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # the `needle` package
# The installed copy when there is one, else the clone's top level.
ROOT = PACKAGE_DIR / "_data" if (PACKAGE_DIR / "_data").is_dir() else PACKAGE_DIR.parent

PIPELINES_DIR = ROOT / "pipelines"
DEFAULT_CONFIG_FILE = ROOT / "config" / "needle.yml"
SERVER_PIPELINES_DIR = ROOT / "server" / "pipelines"

__all__ = ["DEFAULT_CONFIG_FILE", "PIPELINES_DIR", "ROOT", "SERVER_PIPELINES_DIR"]
