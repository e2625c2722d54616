"""The generated codebase the distributed benchmarks run the ``docstring_calls`` bundle over.

``make_codebase(root, functions)`` writes ``functions`` undocumented functions, ``PER_FILE`` to a
module: one docstring job each.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["PER_FILE", "make_codebase"]

PER_FILE = 50


def make_codebase(root: Path, functions: int) -> Path:
    """A package of ``functions`` undocumented functions, ``PER_FILE`` to a module."""
    root.mkdir(parents=True)
    for start in range(0, functions, PER_FILE):
        body = "".join(
            f"def f{i}(x: int) -> int:\n    return x + {i}\n\n\n"
            for i in range(start, min(start + PER_FILE, functions))
        )
        (root / f"m{start // PER_FILE}.py").write_text(body.rstrip() + "\n")
    return root
