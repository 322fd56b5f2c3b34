"""Builds the wheel with the clone's `pipelines/`, `config/` and `server/pipelines/` inside it, as `needle/_data/`.

Everything else is declared in pyproject.toml. The three folders stay at the top of the clone (hayhooks deploys
each `pipelines/*.yml`; the style guide's layout) and are the only copy: the build copies them into the package
it builds, and `needle.core.resources` finds them there in an installed wheel, or at the clone's top otherwise (an
editable install, `PYTHONPATH`). MANIFEST.in puts them in the source distribution a wheel may be built from.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

# Top-level folders Needle reads at run time, copied to needle/_data/<folder> (see needle/core/resources.py).
RUNTIME_FOLDERS = ("pipelines", "config", "server/pipelines")


class BuildWithRuntimeFiles(build_py):
    """`build_py`, then the runtime folders copied into the built `needle` package (not for editable installs)."""

    def run(self) -> None:
        """Build the package, then copy the runtime folders into it (a wheel's build; an editable one reads the clone)."""
        super().run()
        if self.editable_mode:  # an editable install reads them in the clone
            return
        target = Path(self.build_lib) / "needle" / "_data"
        shutil.rmtree(target, ignore_errors=True)  # nothing left over from an earlier build
        for folder in RUNTIME_FOLDERS:
            shutil.copytree(folder, target / folder, ignore=shutil.ignore_patterns("__pycache__", "*.py[co]"))


setup(cmdclass={"build_py": BuildWithRuntimeFiles})
