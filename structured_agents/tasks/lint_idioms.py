"""Fixes that change an idiom are made together or not at all.

A strict reviewer sent back fixes that left their twins beside them in the old idiom: one of
the two adjacent ``return``s of parse's ``__repr__`` turned into an f-string, mccabe's one ``%``
format of thirteen, pyparsing's unpacking with the concatenation it parallels on the next line
left as it was, ``Optional`` written for two of a signature's three ``= None`` parameters, one
of pyparsing's two parallel ``if``/``else`` of ``__mul__`` made a conditional expression (the
other would not fit), one of tomli's twin nested ``if`` statements joined, one of pexpect
4.9.0's two ``type(fd) != type(0)`` three lines apart made ``is not``, one of xlrd 2.0.1's
seven ``bop.kind == oERR or aop.kind == oERR`` made a membership test. For
the rules of :data:`FAMILIES`, a fix is offered (:func:`together`) only when

- every finding of its family in the same function (a class's ``__str__`` and ``__repr__`` count
  as one) can be fixed too (for ``RUF013``, every
  parameter of the signature that defaults to ``None`` is annotated as optional or is itself a
  finding: ruff does not flag ``lookup: ConverterState = None``; for ``SIM108``, every
  ``if``/``else`` assigning one name is a finding: ruff does not report one whose conditional
  expression would be too long), and
- at least half of the family's findings in the file can (all of them for an ambiguous name,
  ``E741``: :data:`_WHOLE_FILE`).

A ``%`` format left because it reads better so (a regular expression's ``{n}``, a logging
call's arguments) is not a twin left behind: the same reviewer called that split sensible.
A ``%`` format with a mapping that ruff does not report is one (``fmt % dict(...)``), and so
is one whose value is a conditional expression: two reviewers sent back schedule 1.2.2's
``Job.__repr__`` with two of its four formats made f-strings. So is a concatenation with a
display that ruff does not report (tablib 3.6.1's ``[self.headers[0]] + self[...]`` beside the
``[column, *self.get_col(index)]`` a reviewer sent back), and so is one onto the same sequence
(pathvalidate 3.2.0's ``common_keywords + self._MACOS_RESERVED_FILE_PATHS`` beside
``common_keywords + ("/",)``).
A fix whose twin the verdict drops (an f-string ruff could not finish writing, a format a
kept change overlaps, which no later pass makes: webtest 3.0.7's ``__repr__`` kept ``' %s' %
self.content_type`` inside a conditional expression beside its twins made f-strings), or the
model rejected, is dropped with it (:func:`twins_dropped`), and so is a format with the same format
string as a dropped one anywhere in the file, or a concatenation onto the same sequence (tinydb
4.8.0's ``self._path + (item,)`` made an unpacking beside ``self._path + (fn,)``). What is kept
must still be at least half of its family's changes in the file (:func:`scarce_dropped`): the
model, shown a file's first eight fixes of cssselect 1.2.0's ninety-nine ``%`` formats, kept
one, and a reviewer sent back the lone f-string as churn.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from structured_agents.tasks.lint_fixes import Change
from structured_agents.tasks.lint_source import Source, findings_at, row_of

__all__ = ["FAMILIES", "scarce_dropped", "together", "twins_dropped"]

FAMILIES = {
    "UP031": "format",
    "UP032": "format",
    "RUF005": "unpacking",
    "RUF013": "optional",
    "SIM108": "ternary",
    "SIM102": "nested if",
    "E701": "one-line block",
    "E702": "statements on one line",
    "E721": "type comparison",
    "PLR1714": "membership test",
    "SIM109": "membership test",
    "E741": "ambiguous name",
}
"""The rules whose fixes change an idiom, and the idiom (``%`` and ``.format()`` formatting
turn into f-strings alike)."""

_WHOLE_FILE = frozenset({"ambiguous name"})
"""Families a file changes everywhere or nowhere: a reviewer sent back unidiff 0.7.5's
``[str(line) for line in self.source_lines()]`` beside ``(l for l in self if ...)`` two methods
up, which has no word to take."""

_SPLIT_BY_READING = frozenset({"format"})
"""Families whose findings left by a decline (the fix reads worse) are no twins left behind."""

_OPTIONAL_WORDS = ("None", "Optional", "Any", "object")
"""Words of an annotation that already admits ``None``."""

Finding = Mapping[str, Any]


Function = ast.FunctionDef | ast.AsyncFunctionDef


def _functions(module: Source) -> list[Function]:
    return [node for node in ast.walk(module.tree) if isinstance(node, Function)]


_TEXT_METHODS = frozenset({"__str__", "__repr__"})
"""Methods that spell their object as text: a class's pair of them is one function here (two
reviewers sent back jsonpath-ng 1.6.1's ``__str__`` made an f-string under a ``__repr__`` left
in ``%``)."""


def _scope(module: Source, scopes: Sequence[Function], row: int) -> int:
    """The first line of the innermost function holding line ``row`` (0: none does), or of
    its class's first :data:`_TEXT_METHODS` where it is one of them."""
    holding = [node for node in scopes if node.lineno <= row <= (node.end_lineno or node.lineno)]
    if not holding:
        return 0
    inner = max(holding, key=lambda node: node.lineno)
    owner = module.parents.get(inner)
    if inner.name in _TEXT_METHODS and isinstance(owner, ast.ClassDef):
        return min(
            node.lineno for node in owner.body if isinstance(node, Function) and node.name in _TEXT_METHODS
        )
    return inner.lineno


def _unflagged_ternaries(module: Source, flagged: set[int]) -> list[int]:
    """The lines of the ``if``/``else`` statements that assign one name in each branch, as
    SIM108 finds, where no SIM108 finding (starting at an offset of ``flagged``) is: ruff does
    not report one whose conditional expression would pass the line length (pyparsing's
    ``__mul__``)."""
    found = []
    for node in ast.walk(module.tree):
        if not (isinstance(node, ast.If) and len(node.body) == 1 and len(node.orelse) == 1):
            continue
        branches = [node.body[0], node.orelse[0]]
        targets = [
            branch.targets[0].id
            for branch in branches
            if isinstance(branch, ast.Assign)
            and len(branch.targets) == 1
            and isinstance(branch.targets[0], ast.Name)
        ]
        parent = module.parents.get(node)
        elif_ = isinstance(parent, ast.If) and parent.orelse == [node]
        if len(targets) == 2 and targets[0] == targets[1] and not elif_ and module.start(node) not in flagged:
            found.append(node.lineno)
    return found


def _unflagged_binops(module: Source, flagged: set[int], wanted: Callable[[ast.BinOp], bool]) -> list[int]:
    """The lines of the binary operations ``wanted`` picks where no finding (starting at an
    offset of ``flagged``) is."""
    return [
        node.lineno
        for node in ast.walk(module.tree)
        if isinstance(node, ast.BinOp) and wanted(node) and module.start(node) not in flagged
    ]


def _mapping_format(node: ast.BinOp) -> bool:
    """A ``%`` format with a mapping (``fmt % dict(...)``, ``fmt % {...}``): ruff reports none
    whose format is not a literal, and converts none, so such a format stays in the old idiom
    (schedule 1.2.2's ``Job.__repr__`` builds ``fmt`` from ``%(interval)s`` parts)."""
    right = node.right
    called = isinstance(right, ast.Call) and isinstance(right.func, ast.Name) and right.func.id == "dict"
    return isinstance(node.op, ast.Mod) and (isinstance(right, ast.Dict) or called)


def _display_concatenation(node: ast.BinOp) -> bool:
    """A concatenation with a list or tuple display (``[x] + y``): ruff does not report one
    whose other side it cannot tell is a sequence (tablib 3.6.1's ``[self.headers[0]] +
    self[self.headers[0]]``, three lines above the ``[column] + self.get_col(index)`` it did)."""
    return isinstance(node.op, ast.Add) and any(
        isinstance(side, ast.List | ast.Tuple) for side in (node.left, node.right)
    )


def _concatenations_onto(module: Source, flagged: set[int]) -> list[int]:
    """The lines of the concatenations with no finding (starting at an offset of ``flagged``)
    onto a sequence a flagged one concatenates onto: ruff reports ``common_keywords + ("/",)``
    and not ``common_keywords + self._MACOS_RESERVED_FILE_PATHS`` two lines above it
    (pathvalidate 3.2.0; a reviewer sent back the unpacking of the one)."""
    added = [
        node for node in ast.walk(module.tree) if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)
    ]
    onto = {sequence for node in added if module.start(node) in flagged and (sequence := _added_onto(node))}
    return [
        node.lineno
        for node in added
        if module.start(node) not in flagged
        and any(ast.unparse(side) in onto for side in (node.left, node.right))
    ]


def _unflagged_optionals(module: Source, functions: Sequence[Function], flagged: set[int]) -> set[int]:
    """The functions (by first line) with a parameter that defaults to ``None`` under an
    annotation not admitting it, which no ``RUF013`` finding (starting at an offset of
    ``flagged``) covers."""
    found = set()
    for node in functions:
        arguments = node.args
        positional = [*arguments.posonlyargs, *arguments.args]
        defaulted = positional[len(positional) - len(arguments.defaults) :]
        pairs: list[tuple[ast.arg, ast.expr | None]] = [*zip(defaulted, arguments.defaults, strict=True)]
        pairs += [*zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)]
        for arg, default in pairs:
            annotation = arg.annotation
            if annotation is None or not (isinstance(default, ast.Constant) and default.value is None):
                continue
            text = module.text[module.start(annotation) : module.end(annotation)]
            if module.start(annotation) not in flagged and not any(word in text for word in _OPTIONAL_WORDS):
                found.add(node.lineno)
    return found


def _chained_ifs(module: Source, fixed: Sequence[Finding]) -> set[int]:
    """The lines of the ``if`` statements nested alone in an ``if`` whose SIM102 join is in
    ``fixed``: where three are nested (ply 3.11's ``if a in st_action: if p is not
    st_actionp[a]: if (a, m) not in _actprint:``), ruff offers the outer join only, and the
    inner one's finding, which the join makes fixable, is no twin left behind."""
    lines = set()
    for finding in fixed:
        if str(finding.get("code")) == "SIM102":
            for node in module.at(row_of(finding), (ast.If,)):
                if len(node.body) == 1 and isinstance(node.body[0], ast.If):
                    lines.add(node.body[0].lineno)
    return lines


def _stays(finding: Finding) -> bool:
    """Whether ``finding`` (left with no fix offered) is a twin left in the old idiom: one of
    :data:`FAMILIES`, and not a decline of :data:`_SPLIT_BY_READING`."""
    family = FAMILIES.get(str(finding.get("code")))
    return family is not None and not (family in _SPLIT_BY_READING and finding.get("fix"))


def together(
    module: Source | None, fixed: Sequence[dict[str, Any]], left: Sequence[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``fixed`` (findings with a fix offered) and ``left`` (findings without) once the fixes
    of :data:`FAMILIES` whose twins stay in the old idiom have moved to ``left``."""
    if module is None or not any(str(finding.get("code")) in FAMILIES for finding in fixed):
        return list(fixed), list(left)
    functions = _functions(module)
    chained = _chained_ifs(module, fixed)
    twins = [finding for finding in left if _stays(finding) and row_of(finding) not in chained]
    staying = {
        (FAMILIES[str(finding.get("code"))], _scope(module, functions, row_of(finding))) for finding in twins
    }

    def flagged(code: str) -> set[int]:
        return set(findings_at(module, [*fixed, *left], code))

    unflagged = [
        *(("optional", line) for line in _unflagged_optionals(module, functions, flagged("RUF013"))),
        *(("ternary", line) for line in _unflagged_ternaries(module, flagged("SIM108"))),
        *(("format", line) for line in _unflagged_binops(module, flagged("UP031"), _mapping_format)),
        *(
            ("unpacking", line)
            for line in _unflagged_binops(module, flagged("RUF005"), _display_concatenation)
        ),
        *(("unpacking", line) for line in _concatenations_onto(module, flagged("RUF005"))),
    ]
    staying |= {(family, _scope(module, functions, line)) for family, line in unflagged}

    def apart(finding: Finding) -> bool:
        family = FAMILIES.get(str(finding.get("code")))
        return family is not None and (family, _scope(module, functions, row_of(finding))) in staying

    def families(findings: Sequence[Finding]) -> Counter[str]:
        return Counter(FAMILIES[code] for f in findings if (code := str(f.get("code"))) in FAMILIES)

    offered = families([f for f in fixed if not apart(f)])
    total = families([*fixed, *twins])
    scarce = {
        family
        for family, count in total.items()
        if 2 * offered[family] < count or (family in _WHOLE_FILE and offered[family] < count)
    }
    keep = [not apart(f) and FAMILIES.get(str(f.get("code"))) not in scarce for f in fixed]
    kept = [f for f, keeps in zip(fixed, keep, strict=True) if keeps]
    moved = [dict(f) for f, keeps in zip(fixed, keep, strict=True) if not keeps]
    return kept, [*left, *moved]


def _code_and_line(change: Change) -> tuple[str, int]:
    code, _, line = change.label.partition(" line ")
    return code, int(line) if line.isdigit() else 0


def _format_string(module: Source, row: int) -> str | None:
    """The format string of the ``%`` format or ``.format()`` call starting on line ``row``."""
    for node in module.at(row, (ast.BinOp, ast.Call)):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            fmt: ast.expr = node.left
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
        ):
            fmt = node.func.value
        else:
            continue
        if isinstance(fmt, ast.Constant) and isinstance(fmt.value, str):
            return fmt.value
    return None


def _added_onto(node: ast.BinOp) -> str | None:
    """What the concatenation ``node`` adds a list or tuple display to, as source
    (``self._path`` of ``self._path + (item,)``); None for any other operation."""
    if isinstance(node.op, ast.Add):
        displays = ast.List | ast.Tuple
        if isinstance(node.right, displays) and not isinstance(node.left, displays):
            return ast.unparse(node.left)
        if isinstance(node.left, displays) and not isinstance(node.right, displays):
            return ast.unparse(node.right)
    return None


def _concatenated(module: Source, row: int) -> str | None:
    """What the concatenation starting on line ``row`` adds a display to (:func:`_added_onto`)."""
    return next((onto for node in module.at(row, (ast.BinOp,)) if (onto := _added_onto(node))), None)


def twins_dropped(text: str, kept: Sequence[Change], dropped: Sequence[Change]) -> list[Change]:
    """The changes of ``kept`` (fixes of ``text``) whose family has a change in the same
    function among ``dropped``, or a dropped change anywhere in the file spelled the same: a
    format of the same format string (jmespath's ``'%s%s' % (node['type'], self._count)`` in two
    methods of a class: a reviewer sent back one made an f-string beside the other), a
    concatenation onto the same sequence (tinydb 4.8.0's ``self._path + (item,)`` and
    ``self._path + (fn,)``, one made an unpacking: "change both or neither"). Fixing one of the
    twins alone would leave the other behind."""
    try:
        module = Source(text)
    except (SyntaxError, ValueError):
        return []
    functions = _functions(module)

    def where(change: Change) -> tuple[str, int] | None:
        code, line = _code_and_line(change)
        family = FAMILIES.get(code)
        return None if family is None else (family, _scope(module, functions, line))

    def spelled(change: Change) -> tuple[str, str] | None:
        code, line = _code_and_line(change)
        family = FAMILIES.get(code)
        found = (
            _format_string(module, line)
            if family == "format"
            else _concatenated(module, line)
            if family == "unpacking"
            else None
        )
        return None if family is None or found is None else (family, found)

    stray: list[Change] = []
    while True:  # a twin dropped here takes its own twins with it
        gone = [*dropped, *stray]
        left = {place for change in gone if (place := where(change)) is not None}
        spellings = {spelling for change in gone if (spelling := spelled(change)) is not None}
        more = [c for c in kept if c not in stray and (where(c) in left or spelled(c) in spellings)]
        if not more:
            return stray
        stray += more


def scarce_dropped(kept: Sequence[Change], dropped: Sequence[Change]) -> list[Change]:
    """The changes of ``kept`` whose family (:data:`FAMILIES`) has fewer changes in ``kept``
    than in ``dropped``: fewer than half of the family's changes stand, and they would be
    the odd ones out in the file (as :func:`together` asks of the fixes offered)."""

    def family(change: Change) -> str | None:
        return FAMILIES.get(_code_and_line(change)[0])

    standing = Counter(name for change in kept if (name := family(change)) is not None)
    gone = Counter(name for change in dropped if (name := family(change)) is not None)
    return [
        change
        for change in kept
        if (name := family(change)) is not None
        and (standing[name] < gone[name] or (name in _WHOLE_FILE and gone[name]))
    ]
