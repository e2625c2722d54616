"""Every module of the package imports, one after the other in one fresh interpreter.

The static checks of the import graph (``test_architecture.py``) read the source; this one
runs it: a module whose imports fail, or that only imports when another was imported first
(in sorted order here), fails with the module's traceback.
"""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import importlib, pkgutil, structured_agents
found = pkgutil.walk_packages(structured_agents.__path__, "structured_agents.")
names = sorted(module.name for module in found)
for name in names:
    importlib.import_module(name)
print(len(names))
"""


def test_every_module_imports() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 100
