"""Candidate fixes for findings ruff has no fix for, shaped as ruff's own (unsafe) fixes.

For a few common rules a finding without a fix gets one or more candidates, each a small edit
that does what the rule asks and nothing else:

- ``E722`` (bare ``except:``): ``except Exception:``, except where the handler reports what
  the code its ``try`` runs raises (:func:`_runs_code`);
- ``E741`` (``l``, which reads as ``1``) bound by a comprehension: the singular of what it
  iterates, ``[line.rstrip() for line in lines]``, where that is the word ``l`` abbreviates
  (:mod:`~structured_agents.tasks.ambiguous_names`);
- ``E721`` (``type(x) == list``): ``type(x) is list`` (``!=``: ``is not``), in a comparison of
  one operator; types compare by identity;
- ``F401`` in an ``__init__.py``, on a name imported from ``typing`` (no package re-exports
  ``Optional``), or in a file where ruff's fix is withheld because its type comments or doctest
  examples use an import, on a name neither uses: the import removed
  (:mod:`~structured_agents.tasks.unused_imports`);
- ``F811`` on an imported name the module binds again, unconditionally and in the same block,
  before anything reads it: the name removed from its import (the same module);
- ``B904`` (``raise`` in an ``except`` without ``from``): ``from`` the handled exception (bound
  as ``err`` when the handler binds none, its ``sys.exc_info()[1]`` read as ``err`` too; from the
  name it gives ``sys.exc_info()[1]`` where it gives it one); where the handler catches only a lookup miss
  (``KeyError``, ``IndexError``, ``StopIteration``...) or a failed ``assert`` used as a check,
  whose traceback a reviewer called noise (and the cause of the error the handler raises,
  wrongly), ``from None`` first, unless the handler stands in another one, whose exception
  ``from None`` would hide too, or its ``try`` calls more than a reading builtin, where the
  miss may come from deep in the call (:data:`_LOOKUPS`); and ``from None`` first where the code
  around raises so as its way (:func:`_quiet_here`);
- ``PLC0415`` (an import inside a function): its removal, where the module ran the same import
  at its top (:mod:`~structured_agents.tasks.repeated_imports`);
- ``E701`` (a block on its header's line, ``if not data: return None``): the block on a line
  of its own, one indent under the header (:mod:`~structured_agents.tasks.one_line_blocks`);
- ``E702`` (statements on one line, ``t.type = 'CPP_WS'; t.value = '\\n'``): the statement after
  the semicolon on a line of its own, at the same indent (the same module);
- ``B007`` (an unused loop variable) where ruff has no rename because the function reads the
  name elsewhere: ``_name``, where each of those reads follows a binding of its own, as in a
  later loop over the same name (:mod:`~structured_agents.tasks.rebound_loops`);
- ``SIM115`` (a file opened without a context manager) where the code closes it by hand, in a
  ``try``'s ``finally:`` or after the statements that use it: the ``with`` statement
  (:mod:`~structured_agents.tasks.opened_files`).

:func:`with_candidates` gives them to the lint task as ruff-shaped findings with a fix, so each
is offered, decided, verified and refined as ruff's unsafe fixes are. A finding of any other rule gets
none: it is left as it is (and said so), never rewritten freely; a small model asked to rewrite
such lines wrote nothing that compiled and fixed its finding. Candidates a strict reviewer
rejected as lint-appeasing noise are not made: ``ClassVar`` on a mutable class attribute
(RUF012) in untyped code, ``import x as x`` re-exports (F401), an ``__all__`` declaring an
``__init__.py``'s own imports (F401: it took colorama 0.4.6's submodules out of ``from colorama
import *``, and xlrd 2.0.1's star-imported names), an ambiguous character written as its escape
(RUF001), a rebound loop variable renamed ``new_k`` (PLW2901: a worse name, and the loop's other
rebindings left), and ``%`` formatting ruff itself declines to convert (UP031). Some of
ruff's own fixes are not offered either (:data:`DECLINED`, and :func:`_declined`'s cases), and a
few are written the way a reviewer asked (:mod:`~structured_agents.tasks.lint_refine`), and
their numbers as the code spells them (:mod:`~structured_agents.tasks.number_spellings`).
"""

from __future__ import annotations

import ast
import builtins
import re
import textwrap
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from structured_agents import syntax
from structured_agents.tasks.ambiguous_names import comprehension_name
from structured_agents.tasks.lint_fixes import Edit
from structured_agents.tasks.lint_idioms import together
from structured_agents.tasks.lint_refine import refine
from structured_agents.tasks.lint_source import (
    NAME_READERS,
    SCOPES,
    Source,
    offset_of,
    reads_only,
    row_of,
    unsafe_fix,
)
from structured_agents.tasks.number_spellings import as_written, respells_numbers
from structured_agents.tasks.one_line_blocks import one_line_block, statements_apart
from structured_agents.tasks.opened_files import opened_with
from structured_agents.tasks.rebound_loops import rebound_loop_name
from structured_agents.tasks.repeated_imports import repeated_import
from structured_agents.tasks.star_imports import explicit_imports
from structured_agents.tasks.unused_imports import shadowed_imports, unused_imports
from structured_agents.tasks.version_branches import dead_lines

__all__ = ["CANDIDATE_RULES", "DECLINED", "with_candidates"]

Candidate = tuple[str, tuple[Edit, ...]]
"""What a candidate does (its fix's message), and its edits."""


_RUNNERS = frozenset({"eval", "exec", "run", "execute", "evaluate", "interpret"})
"""Names of what runs code of another's making (an interpreter's ``run``, ``exec``)."""


def _runs_code(module: Source, handler: ast.ExceptHandler) -> bool:
    """Whether the bare ``except:`` ``handler`` catches what code it runs raises and does not
    raise it again: its ``try`` calls one of :data:`_RUNNERS`. asteval 0.9.31's ``eval``
    reports everything a user's expression raises in ``self.run(node)``, ``SystemExit`` and
    ``KeyboardInterrupt`` too: ``except Exception:`` there lets a sandboxed ``raise SystemExit``
    end the host (a reviewer's REJECT)."""
    if any(isinstance(node, ast.Raise) and node.exc is None for node in ast.walk(handler)):
        return False
    statement = module.parents.get(handler)
    if not isinstance(statement, ast.Try):
        return False
    called = {
        node.func.id if isinstance(node.func, ast.Name) else node.func.attr
        for part in statement.body
        for node in ast.walk(part)
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute))
    }
    return bool(called & _RUNNERS)


def _e722(module: Source, row: int, at: int, _end: int) -> list[Candidate]:
    for handler in module.at(row, (ast.ExceptHandler,)):
        keyword = module.start(handler)
        if _runs_code(module, handler):
            return []
        if handler.type is None and module.text.startswith("except", keyword):
            after = keyword + len("except")
            return [("Catch `Exception`", ((after, after, " Exception"),))]
    return []


def _b904(module: Source, row: int, at: int, _end: int) -> list[Candidate]:
    for raised in module.at(row, (ast.Raise,)):
        handler = module.handler_of(raised)
        if raised.exc is None or raised.cause is not None or handler is None:
            continue
        if handler.name is not None and _root_name(raised.exc) == handler.name:
            return []  # the caught exception itself (pyparsing's exc.with_traceback(None)): no cause to give
        if isinstance(raised.exc, ast.Name) and raised.exc.id[:1].islower():
            return []  # an exception object raised again (lark's ``raise e``): ``from`` rewrites its cause
        end = module.end(raised)
        found: list[Candidate] = []
        kept = _kept_exception(handler, raised)
        if handler.name is not None:
            found.append((f"Raise it from `{handler.name}`", ((end, end, f" from {handler.name}"),)))
        elif kept is not None:
            found.append((f"Raise it from `{kept}`", ((end, end, f" from {kept}"),)))
        elif handler.type is not None:
            used = {n.id for n in ast.walk(handler) if isinstance(n, ast.Name)}
            name = next(n for n in ("err", "exc", "error", "caught") if n not in used)
            bound = module.end(handler.type)
            # what it reads of sys.exc_info() is the exception it now binds
            read = tuple(
                (module.start(n), module.end(n), name) for n in ast.walk(handler) if _exc_info_value(n)
            )
            edits = ((bound, bound, f" as {name}"), *read, (end, end, f" from {name}"))
            found.append((f"Bind the exception as `{name}` and raise from it", edits))
        looked_up = (
            _caught_lookups(handler) and module.handler_of(handler) is None and _looks_up(module, handler)
        )
        if not _says_something(raised.exc) or not (looked_up or _quiet_here(module, handler)):
            return found
        quiet: Candidate = ("Raise it `from None` (its context is not shown)", ((end, end, " from None"),))
        return [quiet, *found]
    return []


def _is_none(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _quiet_here(module: Source, handler: ast.ExceptHandler) -> bool:
    """Whether the code around ``handler`` raises ``from None`` as its way: the handler itself
    does, or the file's ``raise ... from`` statements mostly do. bitstring 5.0.0 re-raises its
    conversion errors ``from None`` throughout: a reviewer sent back each ``from err`` given
    there, and rejected one three lines below a ``from None`` of the same handler."""
    if any(isinstance(node, ast.Raise) and _is_none(node.cause) for node in ast.walk(handler)):
        return True
    causes = [node.cause for node in ast.walk(module.tree) if isinstance(node, ast.Raise) and node.cause]
    quiet = sum(_is_none(cause) for cause in causes)
    return quiet > len(causes) - quiet


def _exc_info_value(node: ast.AST) -> bool:
    """Whether ``node`` is ``sys.exc_info()[1]`` (or ``exc_info()[1]``): the exception being
    handled, as code that also ran on Python 2.5 reads it."""
    if not (
        isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value == 1
    ):
        return False
    call = node.value
    if not (isinstance(call, ast.Call) and not call.args and not call.keywords):
        return False
    func = call.func
    return (isinstance(func, ast.Name) and func.id == "exc_info") or (
        isinstance(func, ast.Attribute)
        and func.attr == "exc_info"
        and isinstance(func.value, ast.Name)
        and func.value.id == "sys"
    )


def _says_something(exc: ast.expr) -> bool:
    """Whether the raised ``exc`` carries a message or a value of its own: pyasn1 0.6.0's
    ``raise KeyError()`` carries none, and ``from None`` would hide the ``KeyError(tagSet)`` it
    handles, the only record of the missing key (a reviewer's EDIT)."""
    return isinstance(exc, ast.Call) and bool(exc.args or exc.keywords)


def _kept_exception(handler: ast.ExceptHandler, raised: ast.Raise) -> str | None:
    """The name the handler's first statements give the exception it handles (pyasn1 0.6.0's
    ``exc = sys.exc_info()[1]``) before ``raised``, and never bind again: ``from`` it, not from a
    second name bound beside it (a reviewer's EDIT)."""
    for statement in handler.body:
        if statement.lineno >= raised.lineno:
            return None
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and _exc_info_value(statement.value)
        ):
            name = statement.targets[0].id
            bound = [
                node
                for node in ast.walk(handler)
                if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store)
            ]
            return name if len(bound) == 1 else None
    return None


_STEPS = frozenset({"next", "iter"})
"""The calls that are an iterator's lookup itself (``next(iter(items))``)."""


def _looks_up(module: Source, handler: ast.ExceptHandler) -> bool:
    """Whether the ``try`` of ``handler`` only reads (:func:`~.lint_source.reads_only`, or steps
    an iterator): the miss it catches is its own lookup's, not one raised deeper in a call
    (lark 1.1.9's ``_deserialize`` looks a class up and calls it, recursively)."""
    statement = module.parents.get(handler)
    return isinstance(statement, ast.Try) and all(reads_only(node, _STEPS) for node in statement.body)


def _root_name(node: ast.expr) -> str | None:
    """The name an expression starts from (``exc`` of ``exc.with_traceback(None)``)."""
    while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _e721(module: Source, row: int, at: int, _end: int) -> list[Candidate]:
    for compare in module.at(row, (ast.Compare,)):
        if module.start(compare) != at or len(compare.ops) != 1:
            continue
        spelled = {ast.Eq: ("==", "is"), ast.NotEq: ("!=", "is not")}.get(type(compare.ops[0]))
        if spelled is None:
            return []
        between = (module.end(compare.left), module.start(compare.comparators[0]))
        segment = module.text[between[0] : between[1]]
        if segment.strip(" \t()") != spelled[0]:
            return []  # a comment or a line break between: left as it is
        start = between[0] + segment.index(spelled[0])
        return [(f"Compare types with `{spelled[1]}`", ((start, start + 2, spelled[1]),))]
    return []


_LOOKUPS = frozenset(
    {"KeyError", "IndexError", "LookupError", "StopIteration", "AttributeError", "AssertionError"}
)
"""Exceptions a handler turns into its own error as a matter of course (a missing key, an
exhausted iterator, an ``assert`` used as a check): their traceback is an implementation detail,
so ``from None`` comes first. Not in a handler inside another handler: ``from None`` would hide
the outer exception as well (munch 4.0.0's ``__getattr__`` turns a ``KeyError`` met while
handling an ``AttributeError`` into its own, and a reviewer sent back the ``from None`` that
lost the property's own error), nor where the ``try`` calls anything but a reading builtin: the
miss may come from deep in the call, and its traceback says where (lark 1.1.9's
``_deserialize``, a reviewer's EDIT). Any other exception is a cause worth showing: it is raised
``from`` it, or the finding stays (a bare ``except:`` can bind no name)."""


def _caught_lookups(handler: ast.ExceptHandler) -> bool:
    """Whether ``handler`` catches only :data:`_LOOKUPS` (by name, alone or in a tuple)."""
    caught = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    names = [node.id if isinstance(node, ast.Name) else getattr(node, "attr", None) for node in caught]
    return bool(names) and all(name in _LOOKUPS for name in names)


_GENERATORS: dict[str, Callable[[Source, int, int, int], list[Candidate]]] = {
    "B007": rebound_loop_name,
    "B904": _b904,
    "E721": _e721,
    "E741": comprehension_name,
    "E701": one_line_block,
    "E702": statements_apart,
    "E722": _e722,
    "PLC0415": repeated_import,
    "SIM115": opened_with,
}
CANDIDATE_RULES = frozenset(_GENERATORS)
"""The rules a finding without a fix gets candidates for."""


DECLINED = {
    "B011": "raise AssertionError() for assert False changes what python -O runs (lark 1.1.9's "
    "reconstruction raised AssertionError there, not its own error), and a file converts its "
    "asserts one at a time",
    "SIM118": "iterating a dict-like rather than its .keys() walks a pandas Series' values",
    "SIM105": "contextlib.suppress is slower on the common path and needs an import",
    "B028": "stacklevel=2 pointed inside the library itself (a cached or generator caller) each time",
    "PLW3301": "max(a, *(gen)) reads worse than the nested max, and fails differently when empty",
    "RUF017": "functools.reduce(operator.iadd, ...) for sum(lists, []) reads worse and adds two "
    "imports, where the lists are few (marshmallow's classes' fields by MRO)",
    "RUF015": "next(iter(x)) for list(x)[0] reads worse in code that is not hot, and raises "
    "StopIteration where an empty x raised IndexError",
    "RUF071": "os.path.commonpath raises on a mix of absolute and relative paths where commonprefix "
    "returned a prefix (pycodestyle's configuration lookup crashed)",
    "SIM223": "a falsy constant in an and is a switch a developer flips (xlrd 2.0.1's 'if 0 and "
    "debug:' and 'blah_formulas = 0 and blah'): folding it deletes the switch and leaves a dead 'if "
    "False:' (a reviewer's REJECT)",
    "SIM222": "a truthy constant in an or is the same switch, turned on (SIM223's twin)",
    "E731": "projects allow assigned lambdas on purpose (more-itertools and toolz ignore E731), and "
    "the def ruff writes was sent back in each file's own layout",
    "RUF023": "sorting __slots__ changes the order code that walks them sees (voluptuous 0.15.2's "
    "_iterate_object yields them in order) and loses their grouping: a reviewer's EDIT, as churn",
    "B905": "zip(..., strict=False) restates the default only to quiet the rule (bitstring 5.0.0, "
    "whose lengths are checked just above: a reviewer's EDIT as noise); strict=True changes what runs",
    "PLC0414": "'import x as x' is how a module marks x as its re-export (PEP 484): bidict 0.24.1's "
    "_typing.py re-exports override so, and with the alias gone ruff's F401 removed the import "
    "three modules take from it (a reviewer's REJECT: import bidict failed)",
    "RUF036": "moving None to the end of a Union changes nothing a reader or a type checker sees "
    "(wsproto 1.2.0's Union[bool, None, str]: a reviewer's REJECT, as churn)",
}
"""Rules whose fixes are not offered, and why (a strict reviewer rejected them on packages
whose tests passed with them)."""


_COPIED = re.compile(r"\b(copied|copy[- ]?pasted|vendored|taken verbatim)\s+(from|out of)\b", re.I)
"""What a definition's docstring says when its code is another project's, kept as it was."""


def _copied_lines(module: Source) -> set[int]:
    """The lines of the functions and classes whose docstring says their code is copied from
    elsewhere (tabulate's ``_CustomTextWrap``: "copy pasted out of the CPython baseline"): a
    restyled copy is harder to keep in step with its source."""
    lines: set[int] = set()
    for node in ast.walk(module.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            docstring = ast.get_docstring(node) or ""
            if _COPIED.search(docstring) and node.end_lineno is not None:
                lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


def _has_fix(diagnostic: Mapping[str, Any]) -> bool:
    fix = diagnostic.get("fix")
    return isinstance(fix, Mapping) and fix.get("applicability") in ("safe", "unsafe")


_RENAMES = frozenset({"B007", "RUF059"})
"""Rules whose fix renames an unused name with a leading underscore."""
_SAYS_UNUSED = re.compile(r"dummy|unused|ignored?|junk|throwaway", re.IGNORECASE)
"""A name that already says it is not used: renaming pyparsing's ``dummy`` to ``_dummy`` only
quiets the linter (a reviewer's words)."""


def _comment_leads_nested_if(module: Source, row: int) -> bool:
    """Whether a comment stands between the ``else:`` on line ``row`` and the ``if`` it holds
    (PLR5501's ``elif`` moves it out of the branch it describes; tabulate's ``# single-line cell
    values`` mirrors the multi-line branch above it)."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.If) and len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
            nested = node.orelse[0]
            if (node.body[-1].end_lineno or 0) < row < nested.lineno:
                return any(line.strip().startswith("#") for line in module.lines[row : nested.lineno - 1])
    return False


_MODULES_SINCE = {"builtins": (3, 0), "typing": (3, 5)}
"""Modules a fix of ruff's may import, by the Python that first has them: B004's fix imports
``builtins`` where ``callable`` is shadowed, which Python 2 calls ``__builtin__`` (bottle
0.12.25, ``>=2.5``, then failed to import on 2.7; compiling it passes)."""


def _imports_newer(diagnostic: Mapping[str, Any], lowest: tuple[int, int] | None) -> bool:
    """Whether ``diagnostic``'s fix imports a module the codebase's ``lowest`` Python lacks."""
    if lowest is None:
        return False
    for edit in (diagnostic.get("fix") or {}).get("edits") or ():
        content = str(edit.get("content") or "")
        for name, since in _MODULES_SINCE.items():
            if lowest < since and re.search(rf"^\s*(import|from) {name}\b", content, re.MULTILINE):
                return True
    return False


def _declined(diagnostic: Mapping[str, Any], module: Source | None) -> bool:
    """Whether ``diagnostic``'s fix is not offered: its rule is :data:`DECLINED`; or, as a strict
    reviewer asked, it renames a name in an unpacking the file repeats elsewhere word for word
    (``num_pos_only, func, keyword_exclude, sigspec = sig`` in six sibling helpers: the shared
    form documents the tuple), folds an ``if __debug__:`` block into its condition (the idiom
    marks debug-only code) or a nested test that acts (:func:`_acts_in_nested_test`), writes a
    number in another spelling that it cannot keep
    (:func:`~structured_agents.tasks.number_spellings.respells_numbers`), moves a comment out of the ``else:``
    it describes (:func:`_comment_leads_nested_if`), writes a conditional expression past
    :data:`_TERNARY_WIDTH` columns, of two equal branches (:func:`_same_branches`), for a block
    a comment closes (:func:`_comment_trails`) or on an ``and``/``or`` test (humanize's
    ``"" if not (unit or ordinal_) or unit in (...) else " "``), folds a nested test into an ``if``
    where either test spans lines (pyparsing's eleven-line condition), turns into an f-string a ``%``
    format that reads better as it is (:func:`_format_reads_worse`), gives each call its own
    default where the calls share it on purpose or bind names once for speed (``len=len``:
    :func:`_shares_default`), deletes an unused name that keeps an overwritten value alive
    (:func:`_keeps_alive`), makes a comparison
    to ``True`` or ``False`` a truth test where the operand may be other than a bool
    (:func:`_compares_a_bool`),
    restyles a docstring that holds doctest examples (pydocstyle's rules: hyperlink 21.0.0's
    ``_decode_path_part`` had its example moved onto the opening quotes' line and a period added
    to its expected output, which its tox's ``--doctest-modules`` would fail), sorts an
    ``__all__`` its comments group (RUF022: as parsimonious 0.10.0's sorted ``Node.__slots__``,
    RUF023, now declined whole, left each comment beside another slot), unpacks a conditional or a slice
    (:func:`_unpacks_worse`), or renames a name on a line the next one aligns with
    (:func:`_aligned_below`) or a name that already says it is unused (``dummy``), renames or
    removes a name a comment of its function names (:func:`_commented`), merges comparisons
    into a membership test that reads worse (:func:`_membership_reads_worse`), respells a
    negated comparison a comment just above explains (:data:`_EQUALITY_NOTE`), moves a bracket
    the next line is aligned with (:func:`_shifts_alignment`), or returns
    ``bool(...)`` of a test for the guard returns it replaces (SIM103: it reads worse; a
    comparison's ``return x is self`` is offered) or what may be other than a ``bool``, or
    negates a negation (:func:`_returns_other_than_bool`), folds a nested ``if`` under a constant flag
    (:func:`_flag_gate`) or in an ``elif`` (:func:`_an_elif`), makes ``all(...)`` of a loop whose test
    it inverts (SIM110: :func:`_inverts_comparison`), or calls the method it stands in on its own
    object (SIM401's ``self.get(key, default)`` in a ``get``: :func:`_calls_itself`)."""
    code = str(diagnostic.get("code"))
    if code in DECLINED:
        return True
    row = row_of(diagnostic)
    if module is None or not 1 <= row <= len(module.lines):
        return False
    if respells_numbers(module.text, module.starts, diagnostic) or _shifts_alignment(diagnostic, module):
        return True
    if code == "PLR5501":
        return _comment_leads_nested_if(module, row)
    if _named_in_comments(diagnostic, module):
        return True
    if code in _RENAMES:
        named = _quoted_name(diagnostic)
        if named is not None and _SAYS_UNUSED.search(named):
            return True
        line = module.lines[row - 1].strip()
        column = int((diagnostic.get("location") or {}).get("column", 1))
        repeated = sum(other.strip() == line for other in module.lines) > 1
        return repeated or _aligned_below(module, row, column)
    if code == "B006":
        return _shares_default(module, row)
    if code == "SIM401":
        return _calls_itself(module, row, _fix_text(diagnostic))
    if code == "F841":
        return _keeps_alive(module, row)
    if code == "PLR1714":
        return _membership_reads_worse(module, row)
    if code == "E712":
        return not any(_compares_a_bool(node) for node in module.at(row, (ast.Compare,)))
    if code.startswith("D") and code[1:].isdigit():
        return any(
            isinstance(node.value, str) and ">>>" in node.value for node in module.at(row, (ast.Constant,))
        )
    if code == "RUF022":
        return any(
            "#" in module.text[module.start(node) : module.end(node)]
            for node in module.at(row, (ast.Assign, ast.AnnAssign, ast.AugAssign))
        )
    if code == "SIM110":
        return "all(" in _fix_text(diagnostic) and any(
            _inverts_comparison(node) for node in module.at(row, (ast.For,))
        )
    if code == "SIM103":
        # return bool(a and b) reads worse than the guards, and so does one guard of a row
        return (
            "bool(" in _fix_text(diagnostic)
            or _returns_other_than_bool(_fix_text(diagnostic))
            or any(_follows_guards(module, node) for node in module.at(row, (ast.If,)))
        )
    if code in ("SIM201", "SIM202"):
        return any(_EQUALITY_NOTE.search(line) for line in module.lines[max(0, row - 3) : row])
    if code == "RUF005":
        return any(_unpacks_worse(node, module.parents.get(node)) for node in _binops_at(module, diagnostic))
    if code == "SIM102":
        return any(
            (isinstance(node.test, ast.Name) and node.test.id == "__debug__")
            or _flag_gate(node.test)
            or _an_elif(module, node)
            or _acts_in_nested_test(node)
            or _long_nested_test(node)
            or _alternatives_joined(node)
            for node in module.at(row, (ast.If,))
        )
    if code == "SIM108":
        return _long_ternary(diagnostic) or any(
            isinstance(node.test, ast.BoolOp) or _same_branches(node) or _comment_trails(module, node)
            for node in module.at(row, (ast.If,))
        )
    if code == "UP031":
        return any(_format_reads_worse(module, node) for node in _binops_at(module, diagnostic))
    return False


_EQUALITY_NOTE = re.compile(r"#.*(!=|==|__ne__|__eq__)")
"""A comment on how a comparison is spelled: pyrsistent 0.20.0's ``# Use `not (k2 == k)`
rather than `!=` to avoid relying on a well implemented `__ne__`, see #268`` above the very
``not (k2 == k)`` SIM201 made ``k2 != k`` (a reviewer's REJECT: the bug it names, back)."""


def _fix_text(diagnostic: Mapping[str, Any]) -> str:
    """What ``diagnostic``'s fix writes, its edits' contents together."""
    fix = diagnostic.get("fix") or {}
    return "".join(str(edit.get("content", "")) for edit in fix.get("edits") or ())


_BOOL_CALLS = frozenset({"isinstance", "issubclass", "hasattr", "callable", "bool", "any", "all"})
"""Builtins that return a ``bool``."""


def _yields_bool(node: ast.expr) -> bool:
    """Whether ``node`` is a ``bool`` whatever its operands: a comparison, a ``not``, a call of
    :data:`_BOOL_CALLS`, ``True``/``False``, or ``and``/``or`` of those."""
    if isinstance(node, ast.Compare) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
        return True
    if isinstance(node, ast.Constant):
        return isinstance(node.value, bool)
    if isinstance(node, ast.BoolOp):
        return all(_yields_bool(value) for value in node.values)
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _BOOL_CALLS


def _returns_other_than_bool(fix: str) -> bool:
    """Whether SIM103's ``fix`` returns what may be other than a ``bool``
    (:func:`_yields_bool`), or negates a negation (:func:`_negates_a_negation`), where the
    guards it replaces returned ``True`` or ``False``: ruff
    wrote ``return PYTHON_SHEBANG_REGEX.match(first_line)`` for autopep8 2.3.2's
    ``is_python_file``, whose docstring promises ``True`` and which then returned a match object
    (a reviewer's EDIT); ``bool(...)`` around it reads worse than the guards."""
    try:
        statements = syntax.parse(textwrap.dedent(fix).strip()).body
    except (SyntaxError, ValueError):
        return True
    returned = [node.value for node in statements if isinstance(node, ast.Return) and node.value is not None]
    return any(not _yields_bool(value) or _negates_a_negation(value) for value in returned)


def _negated_inside(node: ast.expr) -> bool:
    return any(isinstance(inner, ast.UnaryOp) and isinstance(inner.op, ast.Not) for inner in ast.walk(node))


def _negates_a_negation(node: ast.expr) -> bool:
    """Whether ``node`` is ``not (...)`` of a test that holds a ``not`` itself: SIM103 wrote
    ``return not (not os.path.isdir(filename) and not is_python_file(filename))`` for autopep8
    2.3.2's guard, which reads worse than it (a reviewer's EDIT, twice)."""
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and _negated_inside(node.operand)


def _compares_a_bool(node: ast.Compare) -> bool:
    """Whether ``node`` compares, with ``==`` or ``!=``, ``True`` or ``False`` to an operand that
    is a ``bool`` (:func:`_yields_bool`): only then does E712's truth test (``x`` for ``x ==
    True``, ``not x`` for ``x == False``) keep what it does. Of any other value it is not the
    same test: configobj 5.0.9's ``as_bool`` took an empty value for ``False`` where it had
    refused it, and ``check == True`` took the dict of failures ``validate`` returns; its tests
    passed and its doctests failed (a reviewer's REJECT). ``is True`` is no way out either: it
    refused the ``0`` and ``1`` that ``is_boolean`` accepts."""
    if len(node.ops) != 1 or not isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
        return False
    left, right = node.left, node.comparators[0]
    constant, other = (right, left) if isinstance(right, ast.Constant) else (left, right)
    return isinstance(constant, ast.Constant) and isinstance(constant.value, bool) and _yields_bool(other)


def _spans_lines(test: ast.expr) -> bool:
    return (test.end_lineno or test.lineno) > test.lineno


def _nested_if(node: ast.If) -> ast.If | None:
    """The ``if`` nested alone in ``node``'s body (what SIM102 joins it with), if any."""
    inner = node.body[0] if len(node.body) == 1 else None
    return inner if isinstance(inner, ast.If) else None


def _long_nested_test(node: ast.If) -> bool:
    """Whether ``node`` or the ``if`` nested alone in it has a test that spans lines: joined,
    they make one condition of many lines (ply 3.11's two-line ``or`` with ``and v.__doc__:``
    tacked onto its second line, a reviewer's REJECT)."""
    inner = _nested_if(node)
    return inner is not None and (_spans_lines(node.test) or _spans_lines(inner.test))


def _alternatives_joined(node: ast.If) -> bool:
    """Whether ``node``'s test and the test of the ``if`` nested alone in it are both ``or``s:
    joined, each takes parentheses (tablib 3.6.1's ``(self.headers or other.headers) and (not
    self.headers or not other.headers)``, which a reviewer found worse than the nested form)."""
    inner = _nested_if(node)
    tests = (node.test, inner.test) if inner is not None else ()
    return bool(tests) and all(isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) for test in tests)


def _binops_at(module: Source, diagnostic: Mapping[str, Any]) -> list[ast.BinOp]:
    """The binary operations that start where ``diagnostic`` does (a ``%`` format for UP031, a
    concatenation for RUF005)."""
    location = diagnostic.get("location") or {}
    at = offset_of(module.text, location, module.starts)
    row = int(location.get("row", 0))
    return [node for node in module.at(row, (ast.BinOp,)) if module.start(node) == at]


_NAMED = frozenset({"B007", "RUF059", "F841"})
"""Rules whose fix renames or removes the name their message quotes."""


def _quoted_name(diagnostic: Mapping[str, Any]) -> str | None:
    """The name ``diagnostic``'s message quotes first (``Loop control variable `i` not used``)."""
    named = re.search(r"`([^`]+)`", str(diagnostic.get("message", "")))
    return named.group(1) if named is not None else None


def _named_in_comments(diagnostic: Mapping[str, Any], module: Source) -> bool:
    """Whether ``diagnostic`` renames or removes a name (:data:`_NAMED`) that a comment of its
    function names (:func:`_commented`)."""
    named = _quoted_name(diagnostic)
    row = row_of(diagnostic)
    return diagnostic.get("code") in _NAMED and named is not None and _commented(module, row, named)


def _commented(module: Source, row: int, name: str) -> bool:
    """Whether a comment in the function around line ``row`` (the module, outside one) names
    ``name``: code commented out that uses it (xlrd 2.0.1's ``# print(obj_type, obj_id)`` under
    the unpacking a rename made ``_obj_type, _obj_id``, a reviewer's REJECT), or a note about
    it, which a rename or removal leaves stale."""
    statement = next(module.at(row, (ast.stmt,)), None)
    scope = module.scope_of(statement) if statement is not None else None
    first = int(getattr(scope, "lineno", 1))
    last = int(getattr(scope, "end_lineno", None) or len(module.lines))
    if scope is not None:  # and the comments that end its block, after its last statement
        indent = len(module.lines[first - 1]) - len(module.lines[first - 1].lstrip())
        while last < len(module.lines) and (
            not (below := module.lines[last]).strip()
            or (below.lstrip().startswith("#") and len(below) - len(below.lstrip()) > indent)
        ):
            last += 1
    word = re.compile(rf"#.*(?<![\w.]){re.escape(name)}\b")
    return any(word.search(line) for line in module.lines[first - 1 : last])


_DISPLAYS = (ast.Tuple, ast.List, ast.Set, ast.Dict)


def _membership_reads_worse(module: Source, row: int) -> bool:
    """Whether the membership test PLR1714 writes for the comparisons at ``row`` reads worse
    than they do (reviewers of xlrd 2.0.1): they share their right-hand side (``bop.kind == oERR
    or aop.kind == oERR`` as ``oERR in (bop.kind, aop.kind)`` turns the test around), one
    compares with a display (``self.countries in ((0, 0), countries)``, a tuple of tuples), or
    with a variable (:func:`_constant`): ``in`` tests identity before equality, so ``x in (a, b)``
    holds where ``x is a`` though ``x != a`` (a NaN, an object with its own ``__eq__``), and a
    reviewer sent back waitress 3.0.2's ``trusted_proxy in ("*", remote_peer)`` for hiding a
    security check's two cases."""
    for node in module.at(row, (ast.BoolOp,)):
        compared = [value for value in node.values if isinstance(value, ast.Compare) and len(value.ops) == 1]
        rights = {ast.dump(value.comparators[0]) for value in compared}
        lefts = {ast.dump(value.left) for value in compared}
        sides = [side for value in compared for side in (value.left, *value.comparators)]
        if (len(compared) > 1 and len(rights) == 1 and len(lefts) > 1) or any(
            isinstance(side, _DISPLAYS) for side in sides
        ):
            return True
        members = [value.comparators[0] for value in compared] if len(lefts) == 1 else []
        if not all(_constant(member) for member in members):
            return True
    return False


def _constant(node: ast.expr) -> bool:
    """Whether ``node`` is a literal (``-1`` too), a builtin type (``list``) or names a constant
    (``Opcode.CLOSE`` and ``DEFAULT``, a last name in capitals, yes; ``remote_peer`` no)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    if isinstance(node, ast.Constant) or (isinstance(node, ast.Name) and node.id in _BUILTIN_TYPES):
        return True
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return bool(name) and name.isupper()


_BUILTIN_TYPES = frozenset(name for name, value in vars(builtins).items() if isinstance(value, type))
"""The builtins that are types (``list``, ``str``): compared by identity as by equality."""


def _shifts_alignment(diagnostic: Mapping[str, Any], module: Source) -> bool:
    """Whether ``diagnostic``'s fix (one edit, keeping its lines) moves an opening bracket that
    the next line, which it leaves as it was, is aligned with: pyrsistent 0.20.0's
    ``"{0}({1})".format(`` made ``"{}({})".format(`` left its second argument two columns off
    the bracket (a reviewer's EDIT, four times)."""
    edits: Sequence[Mapping[str, Any]] = (diagnostic.get("fix") or {}).get("edits") or []
    if len(edits) != 1 or not isinstance(content := edits[0].get("content"), str):
        return False
    first, last = int(edits[0]["location"]["row"]), int(edits[0]["end_location"]["row"])
    if not 1 <= first <= last <= len(module.lines):
        return False
    old = [line.rstrip("\r\n") for line in module.lines[first - 1 : last + 1]]  # and the line after
    head = old[0][: int(edits[0]["location"]["column"]) - 1]
    tail = old[last - first][int(edits[0]["end_location"]["column"]) - 1 :]
    new = (head + content + tail).split("\n") + old[last - first + 1 :]
    if len(new) != len(old):
        return False
    return any(
        new[index + 1] == old[index + 1]
        and _aligned(old[index], old[index + 1])
        and not _aligned(new[index], new[index + 1])
        for index in range(len(old) - 1)
    )


def _aligned(line: str, below: str) -> bool:
    """Whether ``below`` starts under the first element of a bracket ``line`` opens and leaves
    open (``if (flag > 0) == True:`` over its block's body, at the indent one past its ``(``, is
    not aligned with it)."""
    indent = len(below) - len(below.lstrip(" "))
    if not (below.strip() and 0 < indent <= len(line) and line[indent - 1] in "([{"):
        return False
    depth = 0
    for char in line[indent - 1 :]:
        depth += (char in "([{") - (char in ")]}")
        if depth == 0:
            return False
    return True


def _aligned_below(module: Source, row: int, column: int) -> bool:
    """Whether the next line is aligned with an opening bracket of line ``row`` past
    ``column``: renaming a name there (``ptidx`` to ``_ptidx``) moves the bracket and leaves the
    continuation misaligned (sqlparse's E128)."""
    if row >= len(module.lines):
        return False
    line, below = module.lines[row - 1], module.lines[row]
    indent = len(below) - len(below.lstrip(" "))
    return any(
        char in "([{" and index + 1 == indent for index, char in enumerate(line) if index >= column - 1
    )


_MUTATORS = frozenset(
    [
        "append",
        "extend",
        "insert",
        "pop",
        "remove",
        "clear",
        "update",
        "setdefault",
        "add",
        "discard",
        "sort",
        "reverse",
        "popitem",
    ]
)
"""Methods that change a list, dict or set in place."""


def _shares_default(module: Source, row: int) -> bool:
    """Whether a mutable default on line ``row`` is state its function's calls share on
    purpose: the body changes it, hands it to a nested function, or returns it (pyparsing's
    ``indentedBlock(..., backup_stacks=[])`` keeps its stacks across calls). B006's ``None``
    would then give each call its own, and change what the code does. So is one of a function
    whose defaults bind names once, for speed (``tuple=tuple, len=len``: glob2 0.7's copy of
    ``functools._make_key``, whose ``fasttypes=set(...)`` a reviewer would not have rebuilt
    on every call)."""
    for function in ast.walk(module.tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        arguments = function.args
        positional = arguments.args[len(arguments.args) - len(arguments.defaults) :]
        pairs = [*zip(positional, arguments.defaults, strict=True)]
        pairs += [
            (arg, d)
            for arg, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
            if d is not None
        ]
        names = {arg.arg for arg, default in pairs if default.lineno == row}
        if names and any(_changes(node, names) for node in ast.walk(function) if node is not function):
            return True
        if names and any(isinstance(default, ast.Name) and default.id == arg.arg for arg, default in pairs):
            return True  # ``len=len``: its defaults are bound once on purpose, for speed
    return False


def _comment_trails(module: Source, node: ast.stmt) -> bool:
    """Whether a comment indented under ``node`` follows its last line: it closes the block,
    and a one-line form would leave it indented under nothing (parsedatetime 2.6's ``icu.py``
    keeps ``# 'PM' or ''`` at the ``else:`` block's indent, a reviewer's EDIT)."""
    indent = module.start(node) - module.starts[node.lineno - 1]
    for line in module.lines[node.end_lineno or node.lineno :]:
        text = line.strip()
        if text and not text.startswith("#"):
            return False
        if text and len(line) - len(line.lstrip(" \t")) > indent:
            return True
    return False


_ORDERS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
"""Comparisons whose negation is another method of the operands' (``__ne__`` for ``__eq__``),
or another result for a NaN (``not a < b`` is not ``a >= b``)."""


def _inverts_comparison(loop: ast.For) -> bool:
    """Whether the loop SIM110 makes an ``all(...)`` tests a comparison of :data:`_ORDERS`, which
    ruff's fix writes inverted: schematics 2.1.1's ``FrozenList.__eq__`` looped ``if self[i] !=
    other[i]: return False`` and became ``all(self[i] == other[i] ...)``, and Python 2.7, which
    it supports, does not derive ``__ne__`` from ``__eq__`` (a reviewer's EDIT)."""
    test = loop.body[0].test if loop.body and isinstance(loop.body[0], ast.If) else None
    return isinstance(test, ast.Compare) and any(isinstance(op, _ORDERS) for op in test.ops)


def _returns_constant(statement: ast.stmt) -> bool:
    """Whether ``statement`` is ``if ...: return True`` (or ``False``), with no ``else``."""
    return (
        isinstance(statement, ast.If)
        and not statement.orelse
        and len(statement.body) == 1
        and isinstance(returned := statement.body[0], ast.Return)
        and isinstance(returned.value, ast.Constant)
        and isinstance(returned.value.value, bool)
    )


def _follows_guards(module: Source, node: ast.If) -> bool:
    """Whether the ``if`` SIM103 would fold into ``return`` its test comes after another guard
    returning a constant: deepdiff 9.1.0's row of ``if ...: return False`` guards ending in
    ``if self.ignore_order_func: return False`` and ``return True`` lost its last guard to
    ``return not self.ignore_order_func`` (a reviewer's REJECT: the row reads as a list)."""
    block = module.block_of(node) or []
    at = block.index(node) if node in block else 0
    return at > 0 and _returns_constant(block[at - 1])


def _flag_gate(test: ast.expr) -> bool:
    """Whether ``test`` is a constant flag (``PY2``, ``six.PY3``, ``WINDOWS``): an ``if`` on it
    gates what runs on one platform or version, and schematics 2.1.1's compatibility helpers
    keep that gate apart from the test under it (``if PY2: if '__str__' in ...``: folded into
    one ``and``, a reviewer's REJECT)."""
    name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else ""
    return len(name) > 1 and name.isupper()


def _an_elif(module: Source, node: ast.If) -> bool:
    """Whether ``node`` is an ``elif`` of a chain: its nested ``if`` mirrors the branches before
    it, which SIM102 leaves nested (an ``if`` with an ``else`` is not flagged): webob 1.8.11's
    ``if scheme == 'https': if port == '443'`` beside ``elif scheme == 'http': if port ==
    '80'``, of which only the second was folded (a reviewer's REJECT, three times)."""
    parent = module.parents.get(node)
    return isinstance(parent, ast.If) and parent.orelse == [node]


def _calls_itself(module: Source, row: int, fix: str) -> bool:
    """Whether the fix ``fix`` of a finding on line ``row`` calls the method it stands in on its
    own object: SIM401 wrote ``return self.get(key, default)`` for schematics 2.1.1's
    ``ChainMap.get``, ``return self[key] if key in self else default``, which then recursed for
    ever (a reviewer's REJECT)."""
    for function in ast.walk(module.tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) or not function.args.args:
            continue
        if function.lineno <= row <= (function.end_lineno or 0):
            own = f"{function.args.args[0].arg}.{function.name}("
            if own in fix:
                return True
    return False


def _keeps_alive(module: Source, row: int) -> bool:
    """Whether the unused assignment on line ``row`` holds the value of an item or attribute its
    function then overwrites or deletes (glob2 0.7's copy of ``functools.lru_cache``:
    ``oldvalue = root[RESULT]`` before ``root[KEY] = root[RESULT] = None``). The name keeps the
    old value alive until the function returns, so its ``__del__`` cannot run, and re-enter the
    cache, halfway through the update: a reviewer rejected the deletion."""
    for assign in module.at(row, (ast.Assign,)):
        if not isinstance(assign.value, (ast.Subscript, ast.Attribute)):
            continue
        held = ast.unparse(assign.value)
        scope = module.scope_of(assign) or module.tree
        for node in ast.walk(scope):
            if (
                isinstance(node, (ast.Subscript, ast.Attribute))
                and isinstance(node.ctx, (ast.Store, ast.Del))
                and node.lineno >= assign.end_lineno
                and ast.unparse(node) == held
            ):
                return True
    return False


def _changes(node: ast.AST, names: set[str]) -> bool:
    """Whether ``node`` changes, captures or returns one of ``names``' objects."""
    if isinstance(node, SCOPES):
        return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in _MUTATORS and _root_name(node.func.value) in names
    if isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return _root_name(node.value) in names
    if isinstance(node, ast.AugAssign):
        return _root_name(node.target) in names
    if isinstance(node, (ast.Return, ast.Yield)):
        return isinstance(node.value, ast.Name) and node.value.id in names
    return False


_CONVERSIONS = frozenset({"tuple", "list"})


def _unpacks_worse(node: ast.BinOp, parent: ast.AST | None) -> bool:
    """Whether RUF005's unpacking of the concatenation ``node`` would star a conditional, a
    slice (pyparsing's ``[*(trace if trace is not None else [])[:], self]``) or a conversion of
    a generator (pathvalidate 3.2.0's ``*tuple(f"{name:s}{num:d}" for ...)`` in a nine-line
    display; a conversion of a name is dropped: ``[index, *rows]``), or
    build a tuple as a call's only argument (``_TokenType((*self, name))``): each reads worse
    than the ``+`` it replaces (a reviewer's REJECT)."""
    sole = isinstance(parent, ast.Call) and parent.args == [node] and not parent.keywords
    if sole and (isinstance(node.left, ast.Tuple) or isinstance(node.right, ast.Tuple)):
        return True
    operands: list[ast.expr] = []
    current: ast.expr = node
    while isinstance(current, ast.BinOp) and isinstance(current.op, ast.Add):
        operands.append(current.right)
        current = current.left
    operands.append(current)
    return any(
        isinstance(operand, ast.IfExp)
        or (isinstance(operand, ast.Subscript) and isinstance(operand.slice, ast.Slice))
        or (
            isinstance(operand, ast.Call)
            and isinstance(operand.func, ast.Name)
            and operand.func.id in _CONVERSIONS
            and any(isinstance(argument, ast.GeneratorExp) for argument in operand.args)
        )
        for operand in operands
    )


def _same_branches(node: ast.If) -> bool:
    """Whether both branches of the ``if`` ``node`` are the same statements (mistletoe 1.3.0's
    ``template = '{inner}\\n'`` twice): a conditional expression of two equal values reads as a
    mistake, and a reviewer sent it back."""
    return [ast.dump(statement) for statement in node.body] == [
        ast.dump(statement) for statement in node.orelse
    ]


def _acts_in_nested_test(node: ast.If) -> bool:
    """Whether the ``if`` nested in ``node`` tests by calling something that acts (Markdown's
    ``if processor.test(...):`` / ``if processor.run(...) is not False:``): SIM102 would bury
    the action in the outer test, which a strict reviewer sent back."""
    nested = _nested_if(node)
    return nested is not None and not reads_only(nested.test)


_TERNARY_WIDTH = 79
"""The longest line a SIM108 conditional expression may take; longer, a strict reviewer
preferred the ``if``/``else`` it replaces (Markdown's 88- and 90-column ternaries)."""


def _long_ternary(diagnostic: Mapping[str, Any]) -> bool:
    fix = diagnostic.get("fix")
    edits = fix.get("edits") if isinstance(fix, Mapping) else None
    for edit in edits if isinstance(edits, list) else []:
        column = int((edit.get("location") or {}).get("column", 1))
        lines = str(edit.get("content") or "").splitlines() or [""]
        if column - 1 + len(lines[0]) > _TERNARY_WIDTH or len(lines) > 1:
            return True
    return False


_LOGGING = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})
"""Logging methods, whose message takes its arguments lazily."""


_BUSY_FIELDS = (ast.IfExp, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
"""Values that read worse inside an f-string's field than as a format's argument."""


def _busy_format(module: Source, diagnostic: Mapping[str, Any]) -> bool:
    """Whether the ``%`` format of a UP031 finding has a value that is a conditional expression,
    a lambda or a comprehension (schedule 1.2.2's ``self.unit[:-1] if self.interval == 1 else
    self.unit``): as a field of an f-string it reads worse than the argument it was. The format
    stays with no fix, and so, as its twins (:mod:`~structured_agents.tasks.lint_idioms`), do the
    other ``%`` formats of its function: two reviewers sent back ``Job.__repr__`` with two of its
    four formats made f-strings."""
    for node in _binops_at(module, diagnostic):
        values = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
        if isinstance(node.op, ast.Mod) and any(isinstance(value, _BUSY_FIELDS) for value in values):
            return True
    return False


def _format_reads_worse(module: Source, node: ast.BinOp) -> bool:
    """Whether the f-string UP031 leads to would read worse than the ``%`` format ``node``: its
    format holds a brace (the f-string doubles it: Markdown's ``rf'^(([ ]{{{self.tab_length}}})+)'``)
    or a backslash before a ``%`` (``rf'\\{value}'`` reads as an escaped brace), or it is a
    logging call's message (``logger.warning("...: %r", block)`` formats lazily; a reviewer asked
    for that, not an f-string). ``warnings.warn`` formats nothing itself: its message is as any
    other (jsonpickle 4.1.4's ``warnings.warn('... could not find %s!' % class_name)`` stayed
    beside the ``raise`` below it made an f-string, a reviewer's EDIT)."""
    if not isinstance(node.op, ast.Mod):
        return False
    fmt = module.text[module.start(node.left) : module.end(node.left)]
    if "{" in fmt or "}" in fmt or "\\%" in fmt:
        return True
    parent = module.parents.get(node)
    return (
        isinstance(parent, ast.Call)
        and node in parent.args
        and isinstance(parent.func, ast.Attribute)
        and parent.func.attr in _LOGGING
        and not (isinstance(parent.func.value, ast.Name) and parent.func.value.id == "warnings")
    )


def with_candidates(
    text: str,
    diagnostics: Sequence[Mapping[str, Any]],
    path: str,
    root: Path | None = None,
    lowest: tuple[int, int] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``diagnostics`` (ruff's JSON findings on ``text``, the file ``path``) with a fix
    (refined: :func:`~structured_agents.tasks.lint_refine.refine`) not :data:`DECLINED`, not in
    code its docstring says is copied (:func:`_copied_lines`) and not in a branch no supported
    Python runs (but UP036's, which deletes it:
    :func:`~structured_agents.tasks.version_branches.dead_lines`), then one for each candidate
    of those without one (the finding, with the candidate as its fix); and the findings left
    with no fix offered, among them the fixes of an idiom whose twins stay as they are
    (:func:`~structured_agents.tasks.lint_idioms.together`). The refinements read the
    codebase's ``lowest`` Python where it is given. Given the codebase's ``root``, a star import
    (F403) gets an explicit import as its candidate
    (:func:`~structured_agents.tasks.star_imports.explicit_imports`): the lint task gives it
    only where a check runs, since other modules may import from this one what the star bound
    and it does not use, which only running them shows. An unused import ruff gives no fix
    (F401) gets its removal where nothing could read it
    (:func:`~structured_agents.tasks.unused_imports.unused_imports`), and so does an imported
    name bound again before use (F811:
    :func:`~structured_agents.tasks.unused_imports.shadowed_imports`)."""
    try:
        module: Source | None = Source(text)
    except (SyntaxError, ValueError):
        module = None
    fixed: list[dict[str, Any]] = []
    left: list[dict[str, Any]] = []
    copied = _copied_lines(module) if module is not None else set()
    dead = dead_lines(module, lowest) if module is not None else set()
    explicit = {
        row_of(found): found
        for found in (explicit_imports(root, path, module, diagnostics) if root and module else ())
    }
    unused = unused_imports(path, module, diagnostics) if module is not None else {}
    unused |= shadowed_imports(path, module, diagnostics) if module is not None else {}
    for diagnostic in diagnostics:
        row = row_of(diagnostic)
        if row in copied or (row in dead and diagnostic.get("code") != "UP036"):
            left.append(dict(diagnostic))
            continue
        if diagnostic.get("code") == "F403" and row in explicit:
            fixed.append(explicit[row])
            continue
        if diagnostic.get("code") in ("F401", "F811") and module is not None:
            at = offset_of(text, diagnostic.get("location") or {}, module.starts)
            removal = unused.get(at)
            if removal is not None:
                fixed.append(removal)
                continue
        if diagnostic.get("code") == "UP031" and module is not None and _busy_format(module, diagnostic):
            left.append({**diagnostic, "fix": None})
            continue
        if _has_fix(diagnostic) and module is not None:
            diagnostic = as_written(text, module.starts, diagnostic)
        if (
            _has_fix(diagnostic)
            and not _declined(diagnostic, module)
            and not _imports_newer(diagnostic, lowest)
        ):
            fixed.append(refine(diagnostic, text, module, lowest))
            continue
        if _has_fix(diagnostic):
            left.append(dict(diagnostic))
            continue
        generator = _GENERATORS.get(str(diagnostic.get("code")))
        found: list[Candidate] = []
        if generator is not None and module is not None and not _named_in_comments(diagnostic, module):
            location, end = diagnostic.get("location") or {}, diagnostic.get("end_location") or {}
            row = int(location.get("row", 0))
            if 1 <= row <= len(module.lines):
                at, stop = (
                    offset_of(text, location, module.starts),
                    offset_of(text, end or location, module.starts),
                )
                found = generator(module, row, at, stop)
        fixed += [
            refine({**diagnostic, "fix": unsafe_fix(module, *candidate)}, text, module, lowest)
            for candidate in found
            if module is not None
        ]
        if not found:
            left.append(dict(diagnostic))
    fixed, left = _unpackings_whole(fixed, left)
    return together(module, _defaults_together(module, fixed), left)


def _unpackings_whole(
    fixed: list[dict[str, Any]], left: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``fixed`` and ``left`` once an unpacking's unused names (RUF059) are renamed all or none:
    croniter 2.0.5's ``_error_type, _error_instance, traceback = sys.exc_info()`` kept a
    ``traceback`` whose rename would shadow its ``_traceback`` import (a reviewer's EDIT: "half
    done")."""
    held = {row_of(finding) for finding in left if finding.get("code") == "RUF059"}
    kept: list[dict[str, Any]] = []
    held_back: list[dict[str, Any]] = []
    for finding in fixed:
        (held_back if finding.get("code") == "RUF059" and row_of(finding) in held else kept).append(finding)
    return kept, [*left, *held_back]


def _insertion(diagnostic: Mapping[str, Any]) -> tuple[int, int] | None:
    """Where ``diagnostic``'s fix inserts text (the row and column of its one edit that
    replaces nothing), when it has exactly one such edit."""
    edits = (diagnostic.get("fix") or {}).get("edits") or ()
    places = [
        (int(edit["location"]["row"]), int(edit["location"]["column"]))
        for edit in edits
        if edit.get("location") == edit.get("end_location") and edit.get("location")
    ]
    return places[0] if len(places) == 1 else None


_GUARD = re.compile(r"^\s*if (\w+) is None:")
"""The guard ruff's B006 fix inserts, and the parameter it guards."""


def _unread(module: Source | None, diagnostic: Mapping[str, Any], guard: str) -> bool:
    """Whether the parameter ``guard`` (the text B006's fix inserts) sets is never read in the
    body of the function ``diagnostic``'s default belongs to: the guard would be dead code
    (humanfriendly 10.0's ``content=[]`` of a Sphinx role, which a reviewer asked to drop)."""
    named = _GUARD.match(guard)
    if module is None or named is None:
        return False
    name, row = named.group(1), row_of(diagnostic)
    for function in ast.walk(module.tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) or not function.body:
            continue
        if not function.lineno <= row < function.body[0].lineno:
            continue
        nodes = (node for statement in function.body for node in ast.walk(statement))
        names = {node.id for node in nodes if isinstance(node, ast.Name)}
        return name not in names and not names & NAME_READERS
    return False


def _defaults_together(module: Source | None, fixed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``fixed`` with the B006 fixes of one function made one fix, shared by their findings.
    Each of ruff's inserts its ``if x is None:`` at the same place, the top of the body, so all
    but the first overlapped and were dropped: humanfriendly 10.0's ``man_role`` got
    ``options=None`` beside ``content=[]``, half a change a reviewer sent back. A parameter the
    body never reads gets its ``None`` and no guard (:func:`_unread`)."""
    groups: dict[tuple[int, int], list[int]] = {}
    for index, diagnostic in enumerate(fixed):
        place = _insertion(diagnostic) if diagnostic.get("code") == "B006" else None
        if place is not None:
            groups.setdefault(place, []).append(index)
    result = list(fixed)
    for (row, column), members in groups.items():
        ordered = sorted(members, key=lambda i: (fixed[i]["location"]["row"], fixed[i]["location"]["column"]))
        edits: list[dict[str, Any]] = []
        inserted = ""
        for index in ordered:
            for edit in fixed[index]["fix"]["edits"]:
                content = str(edit.get("content") or "")
                if edit.get("location") != edit.get("end_location"):
                    edits.append(edit)
                elif not _unread(module, fixed[index], content):
                    inserted += content
        location = {"row": row, "column": column}
        if inserted:
            edits.append({"content": inserted, "location": location, "end_location": location})
        for index in members:
            result[index] = {**fixed[index], "fix": {**fixed[index]["fix"], "edits": edits}}
    return result
