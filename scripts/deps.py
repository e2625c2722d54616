"""Print the project's Python requirements for the CPU install path, one per line.

Reads pyproject.toml (the single source of truth) and leaves out what scripts/install.sh
installs by hand: xgrammar (its metadata pulls triton, 1 GB and GPU-only) and torch (pinned
to the CPU build there).

    python scripts/deps.py model dev   # base dependencies plus the named extras
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

HANDLED_BY_INSTALL_SH = {"xgrammar", "torch"}


def requirements(extras: list[str]) -> list[str]:
    project = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    optional = project.get("optional-dependencies", {})
    for extra in extras:
        if extra not in optional:
            raise SystemExit(f"unknown extra {extra!r}; pyproject.toml has {sorted(optional)}")
        reqs += optional[extra]
    name = re.compile(r"^[A-Za-z0-9._-]+")
    return [r for r in reqs if (m := name.match(r)) and m.group(0).lower() not in HANDLED_BY_INSTALL_SH]


if __name__ == "__main__":
    print("\n".join(requirements(sys.argv[1:])))
