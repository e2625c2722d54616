"""Ruff format, as the lint task asks it how a file is laid out: a text's lines formatted
(all, or a range of them), and the usual line length at which a file is formatted already.

Like :mod:`~structured_agents.tasks.ruff`, it runs ``python -m ruff`` in the codebase root on
a text given through stdin (``--stdin-filename`` set to the file's real path), in the file's
own quote style; nothing is written anywhere.
"""

from __future__ import annotations

import difflib
import functools
import subprocess
import sys
from pathlib import Path

from structured_agents.jobs.source import split_lines

__all__ = ["format_lines", "formatted_at"]

_TIMEOUT_S = 30
_CORNER_CASES = 1000
"""A file formatted but for one statement in this many lines is formatted:
pyparsing 3.1.2's ``core.py`` is black's at 88 columns but for 4 statements in 6,087 lines,
where black and ruff format lay out a call with a trailing comment differently."""


def format_lines(
    root: Path, path: str, lines: list[str], first: int | None, last: int, width: int
) -> str | None:
    """``lines`` with their lines ``[first, last)`` formatted by ruff (all of them when
    ``first`` is None); None when it fails."""
    command = [sys.executable, "-m", "ruff", "format", "--no-cache"]
    if first is not None:
        command.append(f"--range={first + 1}:1-{last}:{len(lines[last - 1].rstrip(chr(13) + chr(10))) + 1}")
    command += ["--line-length", str(width), "--config", "format.quote-style = 'preserve'"]
    command += ["--stdin-filename", str(root.resolve() / path), "-"]
    try:  # bytes both ways: a text-mode pipe would turn the file's \\r\\n into \\n
        done = subprocess.run(
            command,
            cwd=root,
            input="".join(lines).encode("utf-8"),
            capture_output=True,
            check=False,
            timeout=_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.decode("utf-8") if done.returncode == 0 and done.stdout else None


@functools.lru_cache(maxsize=16)
def formatted_at(root: Path, path: str, text: str, widths: tuple[int, ...]) -> int | None:
    """The first of ``widths`` at which ruff format, in the file's quote style, leaves ``text``
    as it is, save a few statements (:data:`_CORNER_CASES`: where black and ruff format part,
    a trailing comment inside a call); None where there is none."""
    lines = split_lines(text)
    for width in widths if lines else ():
        formatted = format_lines(root, path, lines, None, 0, width)
        if formatted is None:
            return None
        matcher = difflib.SequenceMatcher(None, lines, split_lines(formatted), autojunk=False)
        if sum(op != "equal" for op, *_ in matcher.get_opcodes()) <= len(lines) // _CORNER_CASES:
            return width
    return None
