"""How the lint task runs ruff on a codebase: its lowest Python, its rules and its line length.

- The target: :func:`~structured_agents.tasks.pytarget.python_target`.
- The rules: the codebase's ruff configuration when it has one (ruff reads it itself); else
  its flake8 configuration, translated (:func:`~structured_agents.tasks.flake8_config.flake8_rules`);
  else ruff's defaults.
- The line length a change may write: ruff's ``line-length`` (or pycodestyle's
  ``max-line-length``), else the shorter of the length flake8 checks
  (:attr:`.Flake8Rules.width`) and black's, where the project uses black (its ``line-length``
  in ``[tool.black]``, else 88); None when the project sets none.
- The rules left unfixed in one file (:meth:`LintSettings.file_options`): isort's (I001) where
  the file has a star import and the fix would move an import statement (not only blank lines,
  or the names inside one statement), since there the order of the imports decides which
  module's name wins and which module is initialized first (pyparsing 3.1.2's ``__init__.py``,
  sorted, fails with a circular import); and, in a codebase whose lowest Python is older than
  ruff's lowest target, the rules whose safe fixes break that Python in the file (six 1.16.0's
  B009 writes ``moves.builtins.exec``, a syntax error on Python 2.7), so the file's other fixes
  stand instead of the whole file being rejected; and F401's where a type comment or a doctest
  example uses a name the file imports, since ruff reads neither and would remove the import it
  needs (:mod:`~structured_agents.tasks.type_comments`), or where another module imports from
  the file a name it imports (:mod:`~structured_agents.tasks.imported_from`: webob 1.8.11's
  ``compat.py``, whose re-exports ruff removed, and 20 test modules failed to import); and
  RUF100's where a ``# noqa`` comment names a rule ruff does not check there, which another tool
  may (oauthlib 4.0.1's ``# noqa: S101`` for its bandit checks, deleted under a selection
  without ``S``: a reviewer's EDIT, three times); and SIM114's where it would join branches one
  of whose tests is an ``and`` (deepdiff 9.1.0's ``_skip_this``: three ``elif ...: skip = True``
  arms, each a clear guard, became one line of ``a and b or c and d or ...``, a reviewer's
  REJECT). The findings stay, with no fix to apply or offer.
- The rules whose safe fixes would write a line past the file's width that it did not have
  (:meth:`LintSettings.lengthening`): autopep8 2.3.2 keeps to 79 columns, and ruff's UP032
  wrote its wrapped ``.format`` calls as one-line f-strings of up to 152 (reviewers' EDIT and
  REJECT). They are left unfixed with an ``--unfixable`` of their own, and their fixes offered
  instead (:func:`~structured_agents.tasks.ruff.fixable_diagnostics`): each is laid out within
  the width, judged and kept or dropped as any fix, with its twins.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from structured_agents import syntax
from structured_agents.tasks.declared_tools import declared_text, declares_in
from structured_agents.tasks.flake8_config import Flake8Rules, flake8_rules
from structured_agents.tasks.imported_from import imported_names
from structured_agents.tasks.lint_source import Source, findings_at
from structured_agents.tasks.pytarget import RUFF_LOWEST, PythonTarget, python_target
from structured_agents.tasks.ruff import ruff_diagnostics, ruff_safe_fixes
from structured_agents.tasks.ruff_config import read_toml, ruff_config_file, ruff_settings
from structured_agents.tasks.ruff_format import formatted_at
from structured_agents.tasks.type_comments import imports_read_unseen

__all__ = ["GROWTH", "MIN_WIDTH", "WIDTHS", "LintSettings", "lint_settings"]

MIN_WIDTH = 79
"""The line length a change may always reach, where the project sets none."""
_STAR_IMPORT = re.compile(r"^\s*from\s+\S+\s+import\s+\*", re.M)
"""A line that may be a star import: the order of a file's imports decides which module's name
wins."""


@functools.lru_cache(maxsize=64)
def _has_star_import(text: str) -> bool:
    """Whether ``text`` imports ``*``: a statement, not a docstring's example (pexpect 4.9.0's
    ``run()`` shows ``from pexpect import *``, and isort's fix of the file was left undone);
    any line that looks like one where the text does not parse. Asked of one file's text by
    every ruff call on it, as :func:`.imports_read_unseen` is."""
    if not _STAR_IMPORT.search(text):
        return False
    try:
        tree = syntax.parse(text)
    except (SyntaxError, ValueError):
        return True
    return any(
        isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names)
        for node in ast.walk(tree)
    )


_STAR_ORDER = ("--unfixable", "I001")
"""isort's fix left unfixed, in a file with a star import."""
_UNREAD_IMPORTS = ("--unfixable", "F401")
"""The removal of unused imports left unfixed, in a file whose type comments or doctest
examples use an import."""
WIDTHS = (79, 88, 99, 100, 110, 119, 120)
"""The line lengths projects keep to (pycodestyle's, black's, flake8 and pylint's common ones)."""
GROWTH = 10
"""Columns a change may add to a line already past the width (a rename's underscores, a ``from
err``) without making it too long: the project keeps that line long."""


@dataclass(frozen=True, slots=True)
class LintSettings:
    """What the lint task gives ruff for one codebase (see the module docstring)."""

    target: PythonTarget
    flake8: Flake8Rules | None
    """flake8's rules, where the codebase configures flake8 and not ruff."""
    width: int | None
    """The project's line length, when it sets one."""

    def ruff_options(self) -> tuple[str, ...]:
        """The options of every ruff call: the target, and flake8's rules where they apply."""
        return (*self.target.ruff_options(), *(self.flake8.ruff_options() if self.flake8 else ()))

    def file_options(self, root: Path, path: str, original: str) -> tuple[str, ...]:
        """:meth:`ruff_options` for ruff's calls on ``root/path``, whose text is ``original``,
        with ``--unfixable`` for the rules left unfixed there (see the module docstring)."""
        return _options_of(self, root, path, original)[0]

    def lengthening(self, root: Path, path: str, original: str) -> frozenset[str]:
        """The rules whose safe fixes, applied to ``original`` (the text of ``root/path``), write
        a line past its width (:meth:`width_for`) that it did not have: their fixes are offered
        and judged one by one instead of applied with the safe ones (see the module docstring)."""
        return _options_of(self, root, path, original)[1]

    @staticmethod
    def leaves_unused_imports(options: tuple[str, ...]) -> bool:
        """Whether ``options`` (:meth:`file_options` of a file) leave unused imports unfixed."""
        return any(options[at : at + 2] == _UNREAD_IMPORTS for at in range(len(options) - 1))

    @staticmethod
    def text_options(options: tuple[str, ...], text: str) -> tuple[str, ...]:
        """``options`` (:meth:`file_options` of a file) for a proposed ``text`` of it: isort's
        fix stands again once no star import is left (explicit imports in their place)."""
        if _has_star_import(text):
            return options
        for at in range(len(options) - 1):
            if options[at : at + 2] == _STAR_ORDER:
                return (*options[:at], *options[at + 2 :])
        return options

    def width_for(self, root: Path, path: str, original: str) -> int:
        """The longest line a change to ``original`` (the text of ``root/path``) may write: the
        project's line length when it sets one, else the one the file keeps to:

        - the first of the usual limits (79, 88, 99...) at which ruff format leaves the file as
          it is (:func:`~structured_agents.tasks.ruff_format.formatted_at`). exceptiongroup
          1.2.2 sets none and is black's at 88; its 55-line ``_suppress.py`` has one line over
          79, and a fix of that line (RUF059) was dropped as too long;
        - else the first of them that all but a few of its lines fit (a URL or two run over).
          boltons sets none and wraps at 79, with a few lines up to 99;
        - else its longest line."""
        if self.width is not None:
            return self.width
        formatted = formatted_at(root, path, original, WIDTHS)
        if formatted is not None:
            return formatted
        lengths = [len(line.rstrip("\r\n")) for line in original.splitlines()]
        few = max(2, len(lengths) // 100)
        for limit in WIDTHS:
            if sum(length > limit for length in lengths) <= few:
                return limit
        return max([MIN_WIDTH, *lengths])

    def rules(self) -> str:
        """Whose rules ruff checks: ``flake8's in setup.cfg: select ...``, or empty for ruff's
        own configuration (the codebase's, or ruff's defaults)."""
        return self.flake8.describe() if self.flake8 is not None else ""


def _imports_in_order(text: str) -> list[tuple[object, ...]] | None:
    """The import statements of ``text`` in their order, each as what it imports (its names in
    sorted order); None where the text does not parse."""
    try:
        tree = syntax.parse(text)
    except (SyntaxError, ValueError):
        return None
    statements = sorted(
        (node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)),
        key=lambda node: (node.lineno, node.col_offset),
    )
    return [
        (
            getattr(node, "module", None),
            getattr(node, "level", None),
            tuple(sorted((alias.name, alias.asname or "") for alias in node.names)),
        )
        for node in statements
    ]


@functools.lru_cache(maxsize=64)
def _sorting_moves_imports(root: Path, path: str, original: str, options: tuple[str, ...]) -> bool:
    """Whether isort's fix (I001) of ``original`` moves an import statement, rather than only
    its blank lines or the order of one statement's names (glob2 0.7's ``__init__.py``, whose
    star import after ``from __future__ import absolute_import`` only wants a blank line)."""
    ordered = ruff_safe_fixes(root, path, original, *options, "--fixable", "I001")
    before = _imports_in_order(original)
    return before is None or _imports_in_order(ordered) != before


@functools.lru_cache(maxsize=64)
def _reexports(root: Path, path: str, original: str, options: tuple[str, ...]) -> bool:
    """Whether an import ``original`` (the module ``root/path``) does not use, by ruff's F401
    under ``options``, binds a name another module of the codebase imports from it
    (:func:`~structured_agents.tasks.imported_from.imported_names`). Not in a package's
    ``__init__.py``, where ruff removes no unused import."""
    if path.endswith("__init__.py") or "import" not in original:
        return False
    unused = [item for item in ruff_diagnostics(root, path, original, *options) if item.get("code") == "F401"]
    if not unused:
        return False
    try:
        module = Source(original)
    except (SyntaxError, ValueError):
        return False
    flagged = set(findings_at(module, unused, "F401"))
    bound = {
        alias.asname or alias.name.split(".")[0]
        for node in ast.walk(module.tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
        if module.start(alias) in flagged
    }
    return bool(bound) and not bound.isdisjoint(imported_names(root, path))


_JOINED_TESTS = ("--unfixable", "SIM114")
"""The joining of branches with the same body left unfixed, where a test joined is an ``and``."""


@functools.lru_cache(maxsize=64)
def _joins_and_tests(original: str) -> bool:
    """Whether an ``if``/``elif`` chain of ``original`` has two branches in a row with the same
    body, one of whose tests is an ``and``: SIM114's fix would write them as one test of
    ``and`` and ``or`` without parentheses."""
    if "elif" not in original:
        return False
    try:
        tree = syntax.parse(original)
    except (SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if not (isinstance(node, ast.If) and len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If)):
            continue
        after = node.orelse[0]
        same = [ast.dump(statement) for statement in node.body] == [ast.dump(s) for s in after.body]
        if same and any(
            isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) for test in (node.test, after.test)
        ):
            return True
    return False


_OTHER_TOOLS = ("--unfixable", "RUF100")
"""The removal of unused ``# noqa`` codes left unfixed, in a file where one names a rule ruff
does not check."""
_NOQA = re.compile(r"#\s*noqa\s*:", re.IGNORECASE)


@functools.lru_cache(maxsize=64)
def _names_other_rules(root: Path, path: str, original: str, options: tuple[str, ...]) -> bool:
    """Whether a ``# noqa`` comment of ``original`` names a rule ruff does not check under
    ``options`` (RUF100 says ``non-enabled``): another tool's, whose directive ruff's fix would
    delete."""
    if not _NOQA.search(original):
        return False
    return any(
        item.get("code") == "RUF100" and "non-enabled" in str(item.get("message"))
        for item in ruff_diagnostics(root, path, original, *options)
    )


@functools.lru_cache(maxsize=64)
def _breaking_fixes(
    target: PythonTarget, root: Path, path: str, original: str, options: tuple[str, ...]
) -> tuple[str, ...]:
    """``--unfixable`` and the rules whose safe fixes, each applied alone, break ``target`` in
    ``original`` (none when all of them together do not)."""
    breaks = target.checker(root, path, original)
    fixed = ruff_safe_fixes(root, path, original, *options)
    if fixed == original or breaks(fixed) is None:
        return ()
    breaking = _safe_rules_giving(root, path, original, options, lambda text: breaks(text) is not None)
    return ("--unfixable", ",".join(breaking)) if breaking else ()


def _safe_rules_giving(
    root: Path, path: str, original: str, options: tuple[str, ...], harm: Callable[[str], bool]
) -> list[str]:
    """The rules, sorted, whose safe fixes, each applied alone to ``original`` (the text of
    ``root/path``, read by ruff with ``options``), give a text ``harm`` holds of."""
    found = ruff_diagnostics(root, path, original, *options)
    safe = {str(item["code"]) for item in found if (item.get("fix") or {}).get("applicability") == "safe"}
    return [
        code
        for code in sorted(safe)
        if harm(ruff_safe_fixes(root, path, original, *options, "--fixable", code))
    ]


@functools.lru_cache(maxsize=32)
def _options_of(
    settings: LintSettings, root: Path, path: str, original: str
) -> tuple[tuple[str, ...], frozenset[str]]:
    """:meth:`LintSettings.file_options` and :meth:`LintSettings.lengthening`, asked for by
    every ruff call on a file."""
    options = _unfixed(settings, root, path, original)
    lengthening = _lengthening(settings, root, path, original, options)
    if lengthening:
        options = (*options, "--unfixable", ",".join(sorted(lengthening)))
    return options, lengthening


def _unfixed(settings: LintSettings, root: Path, path: str, original: str) -> tuple[str, ...]:
    """:meth:`LintSettings.file_options` but the rules left unfixed for their length."""
    options = settings.ruff_options()
    if _has_star_import(original) and _sorting_moves_imports(root, path, original, options):
        options = (*options, *_STAR_ORDER)
    if imports_read_unseen(original) or _reexports(root, path, original, options):
        options = (*options, *_UNREAD_IMPORTS)
    if _names_other_rules(root, path, original, options):
        options = (*options, *_OTHER_TOOLS)
    if _joins_and_tests(original):
        options = (*options, *_JOINED_TESTS)
    if settings.target.lowest is not None and settings.target.lowest < RUFF_LOWEST:
        options = (*options, *_breaking_fixes(settings.target, root, path, original, options))
    return options


def _lengthening(
    settings: LintSettings, root: Path, path: str, original: str, options: tuple[str, ...]
) -> frozenset[str]:
    """:meth:`LintSettings.lengthening`, the file's other ruff ``options`` given."""
    had = set(original.splitlines())
    bound = min(MIN_WIDTH, settings.width or MIN_WIDTH)  # no width is shorter: ruff format runs only past it

    def new_long(text: str, width: int) -> bool:
        return any(len(line) > width and line not in had for line in text.splitlines())

    if not new_long(ruff_safe_fixes(root, path, original, *options), bound):
        return frozenset()
    width = settings.width_for(root, path, original)
    return frozenset(_safe_rules_giving(root, path, original, options, lambda text: new_long(text, width)))


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and value > 0 else None


_BLACK_WIDTH = 88
"""black's line length when its configuration sets none."""


def _black_width(root: Path, declared: str) -> int | None:
    """The line length black keeps the codebase to: ``[tool.black]``'s ``line-length``, else
    black's default where the codebase configures or installs black (wsproto 1.2.0's tox runs
    ``black --check`` at 88, under a flake8 that allows 120); None where it does not use black.
    ``declared``: what the codebase says it installs
    (:func:`~structured_agents.tasks.declared_tools.declared_text`)."""
    tool = (read_toml(root / "pyproject.toml") or {}).get("tool")
    black = tool.get("black") if isinstance(tool, dict) else None
    if isinstance(black, dict):
        return _positive(black.get("line-length")) or _BLACK_WIDTH
    return _BLACK_WIDTH if declares_in(declared, "black") else None


def lint_settings(root: Path) -> LintSettings:
    """The lint settings of the codebase at ``root`` (see the module docstring)."""
    target = python_target(root)
    if ruff_config_file(root) is not None:
        settings = ruff_settings(root)
        lint = settings.get("lint")
        pycodestyle = lint.get("pycodestyle") if isinstance(lint, dict) else None
        width = _positive(pycodestyle.get("max-line-length")) if isinstance(pycodestyle, dict) else None
        width = width or _positive(settings.get("line-length"))
        return LintSettings(target, None, width or _black_width(root, declared_text(root)))
    declared = declared_text(root)  # read once: flake8's plugins and black are both in it
    flake8 = flake8_rules(root, declared)
    widths = [width for width in (flake8.width if flake8 else None, _black_width(root, declared)) if width]
    return LintSettings(target, flake8, min(widths, default=None))
