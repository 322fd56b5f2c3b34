"""Type-check Needle with mypy, the components and stores under the names they install as.

    python .ci/typecheck.py [mypy options]      (what `make typecheck` runs)

pyproject.toml maps folders to packages (`components/joiners` installs as
`haystack_integrations.components.joiners.needle`), and the editable install resolves those names with setuptools'
import finder, which mypy cannot follow: run on the folders, mypy would check `components.joiners.weighted_rrf_joiner`,
and every `from haystack_integrations.components.joiners.needle import ...` would resolve to nothing (silently `Any`).
So this script first builds build/typecheck/, mirroring each mapped package as a real folder of symlinks to its own
`.py` files (never to a whole folder, so that no file gets a second name through a subfolder), then runs mypy on
what pyproject.toml's `[tool.mypy]` names (`files`, with `mypy_path = build/typecheck`), and prints each error in a
mirrored file under its path in the clone (`components/joiners/weighted_rrf_joiner.py`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: mypy's own dependency reads TOML there
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
TREE = REPO / "build" / "typecheck"


def build_tree() -> None:
    """Recreate build/typecheck/ from pyproject.toml's `[tool.setuptools.package-dir]`."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    shutil.rmtree(TREE, ignore_errors=True)
    for package, folder in config["package-dir"].items():
        target = TREE.joinpath(*package.split("."))
        target.mkdir(parents=True, exist_ok=True)
        for source in sorted((REPO / folder).glob("*.py")):
            (target / source.name).symlink_to(os.path.relpath(source, target))


def in_clone(line: str) -> str:
    """An output line with a mirrored file's path replaced by the file's own path in the clone."""
    path, colon, rest = line.partition(":")
    if not colon or not path.startswith("build/typecheck/"):
        return line
    return os.path.relpath(os.path.realpath(REPO / path), REPO) + colon + rest


def main(arguments: list[str]) -> int:
    """Build the tree, run mypy with `arguments`, print its report; mypy's exit status."""
    build_tree()
    done = subprocess.run(
        [sys.executable, "-m", "mypy", *arguments], cwd=REPO, capture_output=True, text=True, check=False
    )
    sys.stdout.write("".join(in_clone(line) for line in done.stdout.splitlines(keepends=True)))
    sys.stderr.write(done.stderr)
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
