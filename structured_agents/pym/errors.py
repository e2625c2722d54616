"""Errors of ``.pym`` tool scripts, all under :class:`structured_agents.errors.ToolError`::

    ToolError
    └── PymError                     a .pym script failed (location: file, line, column)
        ├── PymCheckError            the checker rejected the script (carries every Diagnostic)
        │   └── PymParseError        the script is not valid Python (PYM001)
        ├── PymInputError            the call's arguments do not fit the script's inputs
        └── PymRunError              also a ToolExecutionError: the script ran and failed
            ├── PymExecutionError    the script raised (NameError, ValueError, ...) or crashed
            ├── PymExternalError     a host function (read_file, run_ruff, ...) refused or failed
            ├── PymLimitError        memory, duration, recursion, timeout, request timeout or
            │                        external-call limit (the one hit, with what was measured)
            └── PymOutputError       the result is not JSON-serialisable or is too large

Locations are 1-based lines and columns of the user's ``.pym`` file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from structured_agents.errors import ToolError, ToolExecutionError

__all__ = [
    "Diagnostic",
    "PymCheckError",
    "PymError",
    "PymExecutionError",
    "PymExternalError",
    "PymInputError",
    "PymLimitError",
    "PymOutputError",
    "PymParseError",
    "PymRunError",
]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem the checker found in a ``.pym`` file."""

    code: str
    """Stable code, ``PYM001`` .. ``PYM030`` (see :mod:`structured_agents.pym.checker`)."""
    message: str
    """What is wrong, naming the construct or declaration."""
    path: str
    """The script's path as given (``""`` when checking a string)."""
    line: int
    """1-based line of the offending construct."""
    column: int
    """1-based column of the offending construct."""

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}: {self.code} {self.message}"


class PymError(ToolError):
    """A ``.pym`` script failed; the message starts with ``file:line:col:`` when known."""

    def __init__(self, message: str, *, path: str = "", line: int = 0, column: int = 0) -> None:
        self.message = message
        self.path = path
        self.line = line
        self.column = column
        super().__init__(message)

    def __str__(self) -> str:
        if not self.path:
            return self.message
        if not self.line:
            return f"{self.path}: {self.message}"
        return f"{self.path}:{self.line}:{self.column}: {self.message}"


class PymCheckError(PymError):
    """The checker rejected a script; ``diagnostics`` lists every problem found."""

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        self.diagnostics = tuple(diagnostics)
        first = self.diagnostics[0] if self.diagnostics else Diagnostic("PYM000", "rejected", "", 0, 0)
        super().__init__(
            "; ".join(f"{d.code} {d.message}" for d in self.diagnostics) or first.message,
            path=first.path,
            line=first.line,
            column=first.column,
        )

    def __str__(self) -> str:
        return "\n".join(str(d) for d in self.diagnostics)


class PymParseError(PymCheckError):
    """The script is not valid Python, or the sandbox's parser rejected it."""


class PymInputError(PymError):
    """The arguments of a call do not match the script's declared inputs."""


class PymRunError(PymError, ToolExecutionError):
    """The script started running and failed."""


class PymExecutionError(PymRunError):
    """The script raised an exception it did not catch, or its sandbox worker crashed."""


class PymExternalError(PymRunError):
    """A host function refused (path outside the workspace, not granted) or failed.

    Raised by the externals themselves, it reaches the script as ``exc_type`` (a built-in
    exception name the sandbox knows) so the script may catch it; uncaught, the run fails
    with this error.
    """

    def __init__(
        self, message: str, *, exc_type: str = "OSError", path: str = "", line: int = 0, column: int = 0
    ) -> None:
        self.exc_type = exc_type
        super().__init__(message, path=path, line=line, column=column)


class PymLimitError(PymRunError):
    """The script hit a limit; ``limit`` names the one hit: ``memory``, ``duration``, ``recursion``,
    ``external_calls``, ``timeout`` (the run's wall clock) or ``request_timeout`` (the pool's)."""

    def __init__(self, message: str, *, limit: str, path: str = "", line: int = 0, column: int = 0) -> None:
        self.limit = limit
        super().__init__(message, path=path, line=line, column=column)


class PymOutputError(PymRunError):
    """The script's result is not JSON-serialisable or exceeds the output limit."""
