"""A tiny package built as an sdist in a folder, so ``sa eval --from-dir`` needs no network."""

from __future__ import annotations

import tarfile
from pathlib import Path

NAME, VERSION = "tinypkg", "0.1.0"

CORE = '''"""Small helpers for greeting people and adding numbers."""

import os


def add(a, b):
    """Return the sum of two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


def shout(text):
    """Return the text in capital letters."""
    return text.upper()


def is_missing(value):
    """Tell whether a value is missing."""
    return value == None


class Greeter:
    """Greets people by name."""

    def __init__(self, name):
        self.name = name

    def greet(self):
        """Say hello to the person."""
        return "hello " + self.name
'''

TESTS = """from tinypkg.core import Greeter, add, is_missing, shout


def test_add():
    assert add(2, 3) == 5


def test_shout():
    assert shout("hi") == "HI"


def test_greeter():
    assert Greeter("ann").greet() == "hello ann" and is_missing(None)
"""

FILES = {
    "pyproject.toml": f'[project]\nname = "{NAME}"\nversion = "{VERSION}"\n',
    "tinypkg/__init__.py": '"""The tiny package."""\n',
    "tinypkg/core.py": CORE,
    "tests/test_core.py": TESTS,
    # another project's copy: ruff alone would drop its unused import, the lint task leaves it
    "tinypkg/_vendored.py": '"""Vendored from six 1.16.0."""\n\nimport sys\n\nPY3 = True\n',
    "docs/conf.py": 'def setup(app):\n    """Not library code: never a target."""\n',
}


def build_sdist(folder: Path) -> Path:
    """Write ``tinypkg-0.1.0.tar.gz`` into ``folder`` (made if missing); its path."""
    source = folder / "build" / f"{NAME}-{VERSION}"
    for relative, text in FILES.items():
        (source / relative).parent.mkdir(parents=True, exist_ok=True)
        (source / relative).write_text(text, encoding="utf-8")
    archive = folder / f"{NAME}-{VERSION}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(source, arcname=source.name)
    return archive
