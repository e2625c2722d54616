"""Write the docstring task's general vocabulary: the words CPython's standard library uses in
the docstrings of many of its modules (``structured_agents/tasks/docstring/general_words.txt``).

A docstring may use such a word about any code ("Return the value of the given key"); a word
outside it must come from the code it documents (the verifier's ``unknown words`` check).
Stems as :func:`structured_agents.words.words` makes them, one per line, sorted. Run with the
project's Python (3.11) to regenerate::

    .venv/bin/python scripts/general_words.py
"""

from __future__ import annotations

import ast
import sys
import sysconfig
from collections import Counter
from pathlib import Path

from structured_agents.words import words

MIN_MODULES = 5
"""A word is general when the docstrings of at least this many standard modules use it."""
OUT = Path(__file__).resolve().parents[1] / "structured_agents" / "tasks" / "docstring" / "general_words.txt"


def main() -> None:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    counts: Counter[str] = Counter()
    for path in sorted(stdlib.rglob("*.py")):
        if any(part in ("test", "tests", "idlelib", "site-packages", "lib2to3") for part in path.parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        found: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                text = ast.get_docstring(node)
                if text:
                    found.update(word for word in words(text) if word.isalpha())
        counts.update(found)
    general = sorted(word for word, count in counts.items() if count >= MIN_MODULES)
    OUT.write_text("".join(f"{word}\n" for word in general), encoding="utf-8")
    print(f"{len(general)} words from {sys.version.split()[0]}'s standard library -> {OUT}")


if __name__ == "__main__":
    main()
