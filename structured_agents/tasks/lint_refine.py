"""Some of ruff's own fixes, written the way a strict reviewer asked for them.

Each refinement changes a fix's text into an equivalent one, never its meaning:

- ``SIM108``: ruff writes ``x = a if not c else b``; the reviewer asked for the positive form,
  ``x = b if c else a``. Only where neither branch is itself an unparenthesized conditional or
  lambda, whose precedence would regroup the expression. A branch that is an operation
  (``size - self.__size[key] if key in self.__data else size``) is parenthesized: the reviewer
  asked not to leave the reader to work out that the subtraction binds first.
- ``RUF005``: ruff writes ``[a, *list(rows)]`` for ``[a] + list(rows)``; unpacking already
  iterates ``rows`` once, so the copy goes: ``[a, *rows]``, and so does ``tuple``'s
  (webtest 3.0.7's ``(*tuple(file_info), None)``, a reviewer's EDIT). Not in a file that binds
  the name itself.

- ``SIM108`` and ``SIM212``: ``files = args if args else [sys.stdin]`` (a name's value where
  it is true) is written ``files = args or [sys.stdin]`` (tabulate 0.9.0's ``_main``, whose
  ``[sys.stdin] if not args else args`` SIM212 turned round: a reviewer's EDIT);
- ``SIM108``: a lambda branch is parenthesized, ``Group if c else (lambda expr: expr)``: the
  reviewer found the bare lambda after ``else`` ambiguous to read.
- ``PLR1714`` and ``SIM109`` (the same rewrite): a membership test that replaced an ``or``
  grouped inside an ``and`` takes the grouping parentheses' place
  (``row_type in (list, str) and (...)``).
- ``RUF005``, ``UP031`` and ``SIM101``: a fix that becomes an atom (a tuple display, a call)
  inside parentheses that only grouped the expression it replaces takes their place, so
  ``(operDef + (None,))[:4]`` becomes ``(*operDef, None)[:4]``, not ``((*operDef, None))[:4]``,
  ``return ('%s on %s' % (a, b))`` becomes ``return '{} on {}'.format(a, b)`` (then ruff's
  f-string), and ``not (isinstance(d, list) or isinstance(d, dict))`` becomes ``not
  isinstance(d, (list, dict))`` (a reviewer sent back jsonpath-ng 1.6.1's ``not
  (isinstance(...))``). A tuple display unpacked where it stands (``cls(*(args + (d,)), **kwargs)``)
  gives its elements to the call or display instead, ``cls(*args, d, **kwargs)``: the reviewer
  sent back ``cls(*(*args, d), **kwargs)``, which builds a tuple only to unpack it (and lark
  1.1.9's ``TransformerChain(*(*self.transformers, other))``, for ``*self.transformers +
  (other,)`` with no parentheses of its own), and so does a ``tuple()`` or ``list()`` copy
  unpacked where it stands, ``build_opener(*handlers, h)`` for ``build_opener(*tuple(handlers +
  [h]))`` (feedparser 6.0.14: a reviewer sent back ``*tuple([*handlers, h])``).
- ``SIM108``: an assignment whose bare annotation stands just above the ``if``
  (``sender_id: c.Hashable``) takes the annotation, in the declaration's place:
  ``sender_id: c.Hashable = ANY_ID if sender is ANY else make_id(sender)``. The reviewer sent
  back the declaration left dangling above the conditional expression.
- ``F841``: an unused assignment whose value only reads is deleted whole, where ruff's fix
  would leave the value as a bare expression (mistune's ``full_content[:-len(text)]``).
- ``F841`` and ``RUF059``: constants unpacked into names none of which is read (pyparsing's
  ``TRY, MATCH, FAIL = 0, 1, 2``) are deleted, not renamed ``_TRY, _MATCH, _FAIL``: the reviewer
  asked to delete dead code. Each of the names' findings gets the same deletion.
- ``B007`` and ``RUF059``: an unused name is renamed to the name the file already throws values
  away with (``_``, or ``__``, where the file binds it and never reads it), not ``_name``:
  the reviewer asked for ``for _ in range(...)`` where the file's other loops say so.
- ``B007``: an unused index of ``enumerate`` goes with it, ``for p in patterns:`` for
  ``for idx, p in enumerate(patterns):``, not ``for _idx, p in enumerate(patterns):``, which a
  reviewer sent back for keeping the pointless ``enumerate`` (pexpect 4.9.0). Not in a file
  that binds the name ``enumerate``.
- ``UP036``: a removed version block that stood between two runs of blank lines leaves one
  run, the longer, so no two blank lines are left inside a class (pyasn1 0.6.0's ``__long__``).
- ``B007``: an unused key of ``.items()`` goes with it, ``for val in self.values():`` for ``for
  key, val in self.items():``, as a reviewer asked (addict 2.4.0).
- ``PLR1714``: the membership test takes a tuple (``item in ('_', '-')``) where ruff writes a
  set. A set hashes the value, which raises ``TypeError`` for an unhashable one where the
  comparisons it replaces compared it: ply 3.11's lexer, given a state whose type is a list,
  crashed instead of logging its error, and a reviewer sent the set back (a tuple also suits a
  codebase that supports Python 2.6, which has no set displays: toml 0.10.2).
- ``UP031``: where ruff's ``.format()`` call passes an argument holding a string literal as a
  subscript's key (jmespath's ``'_token_nud_%s' % left_token['type']``), which ruff's UP032
  never turns into an f-string, the f-string is written here,
  ``f"_token_nud_{left_token['type']}"``, in the other quote where an argument holds the
  string's own (and not where the string holds that one too), for a codebase whose lowest
  Python has f-strings (3.6). ``str.format`` and an
  f-string format each value the same way (``format(value, spec)``), and each of the
  ``{}`` fields takes one argument, in order, so each is evaluated once, in the same order.
- ``UP031``: ``'%(name)s' % locals()`` (or ``vars()``), which ruff writes
  ``'{name}'.format(**locals())`` and its UP032 leaves, becomes the f-string ``f'{name}'``,
  each implicitly joined piece with a field an f-string of its own, for a codebase whose lowest
  Python has f-strings: oauthlib 4.0.1's ``uri_validate`` builds 29 regular expressions so. Not
  where a field indexes (``{name[key]}``, a string key to ``str.format``), nor in a file that
  binds ``locals`` or ``vars`` itself.
- ``UP031``: ``'%s' % value``, a format of one field and nothing else, becomes ``str(value)``,
  not ``f'{value}'``: a reviewer sent back jsonpath-ng 1.6.1's ``f'{self.target}'``. Not in a
  file that binds the name ``str``.
- ``UP031``: an argument that only calls ``repr`` (or ``ascii``, ``str``) on a value becomes the
  field's conversion, ``'<{!r}>'.format(x)``, so ruff's f-string reads ``f'<{x!r}>'`` rather than
  ``f'<{repr(x)}>'``, the spelling ruff's own RUF010 sends back (h11 0.14.0's
  ``"<Headers(%s)>" % repr(list(self))``). Not in a file that binds the name itself.

- ``SIM110``: ``any(d for d in self.dicts)``, where the loop it replaces tested each item bare,
  becomes ``any(self.dicts)`` (webob 1.8.11's ``MultiDict.__contains__``: a reviewer's EDIT);
  ``any`` tests each item's truth either way.
- ``UP028``: the lines of a ``yield from``'s iterable aligned under its first line move as far
  as it moved (autopep8 2.3.2's ``for candidate in _shorten_line(tokens=tokens,`` left its
  arguments six columns off the bracket of ``yield from _shorten_line(``: a reviewer's EDIT).

A fix whose text does not parse, or that holds nothing to refine, is left as ruff wrote it.
"""

from __future__ import annotations

import ast
import io
import itertools
import keyword
import re
import string
import tokenize
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import libcst as cst

from structured_agents import syntax
from structured_agents.tasks.lint_fixes import fix_edits
from structured_agents.tasks.lint_source import Source, location_of, offset_of, reads_only, row_of, unsafe_fix

__all__ = ["REFINED", "refine"]


def _rebinds(text: str, name: str) -> bool:
    """Whether the file's ``text`` may bind ``name`` itself (an assignment, a definition, an
    import), so a call of it is not the builtin's."""
    word = re.escape(name)
    return (
        re.search(
            rf"(?m)^\s*(?:{word}\s*=|def\s+{word}\b|class\s+{word}\b)|\bas\s+{word}\b|\bimport\s+{word}\b",
            text,
        )
        is not None
    )


class _PositiveTernary(cst.CSTTransformer):
    def __init__(self) -> None:
        super().__init__()
        self._depth = 0

    def visit_IfExp(self, node: cst.IfExp) -> bool:
        self._depth += 1
        return True

    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp) -> cst.BaseExpression:
        self._depth -= 1
        node = updated_node
        if self._depth == 0:  # the conditional the fix wrote, not one it carries over
            node = node.with_changes(body=_grouped(node.body), orelse=_grouped(node.orelse))
        test = node.test
        if (
            isinstance(test, cst.UnaryOperation)
            and isinstance(test.operator, cst.Not)
            and all(_atomic(branch) for branch in (node.body, node.orelse))
        ):
            node = node.with_changes(test=test.expression, body=node.orelse, orelse=node.body)
        if self._depth == 0 and _plain_name(node.test) and node.test.deep_equals(node.body):
            orelse = node.orelse
            if not _atomic(orelse):  # a conditional (a lambda is grouped already)
                orelse = orelse.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            return cst.BooleanOperation(left=node.body, operator=cst.Or(), right=orelse)
        return node


_OPERATIONS = (cst.BinaryOperation, cst.BooleanOperation, cst.Comparison, cst.Lambda)


def _plain_name(node: cst.BaseExpression) -> bool:
    """Whether ``node`` is a name or an attribute of one (``args``, ``self.default``)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def _grouped(branch: cst.BaseExpression) -> cst.BaseExpression:
    """``branch`` in parentheses when it is an unparenthesized operation or lambda."""
    if isinstance(branch, _OPERATIONS) and not branch.lpar:
        return branch.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return branch


class _NoCopy(cst.CSTTransformer):
    def __init__(self, copies: frozenset[str]) -> None:
        super().__init__()
        self._copies = copies

    def leave_StarredElement(
        self, original_node: cst.StarredElement, updated_node: cst.StarredElement
    ) -> cst.StarredElement:
        value = updated_node.value
        if (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Name)
            and value.func.value in self._copies
            and len(value.args) == 1
            and value.args[0].star == ""
            and value.args[0].keyword is None
            and not value.lpar
        ):
            return updated_node.with_changes(value=value.args[0].value)
        return updated_node


def _atomic(branch: cst.BaseExpression) -> bool:
    """Whether ``branch`` keeps its grouping wherever it stands in a conditional expression."""
    return bool(getattr(branch, "lpar", ())) or not isinstance(branch, cst.IfExp | cst.Lambda)


def _rewrite(content: str, transformer: cst.CSTTransformer) -> str:
    try:
        module = cst.parse_module(content)
    except cst.ParserSyntaxError:
        return content
    return module.visit(transformer).code


Version = tuple[int, int]


def _sim108(content: str, _text: str, _lowest: Version | None) -> str:
    return _rewrite(content, _PositiveTernary())


def _ruf005(content: str, text: str, _lowest: Version | None) -> str:
    copies = frozenset(name for name in ("list", "tuple") if not _rebinds(text, name))
    return _rewrite(content, _NoCopy(copies)) if copies else content


_ATOMS = (
    ast.Call,
    ast.Attribute,
    ast.Subscript,
    ast.Name,
    ast.Constant,
    ast.JoinedStr,
    ast.List,
    ast.Dict,
    ast.Set,
)


def _enclosed(content: str) -> bool:
    """Whether ``content`` is one bracketed group: its first bracket closes at its end."""
    depth = 0
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(content).readline) if t.type == tokenize.OP]
    except (tokenize.TokenError, SyntaxError):
        return False
    for index, token in enumerate(tokens):
        depth += (token.string in "([{") - (token.string in ")]}")
        if depth == 0:
            return index == len(tokens) - 1 and content.rstrip().endswith(token.string)
    return False


def _atom(content: str) -> bool:
    """Whether ``content`` is an expression that needs no parentheses anywhere: a call, an
    attribute, a subscript, a name, a literal or a display (a tuple only in its own parentheses)."""
    try:
        node = syntax.parse(content, mode="eval").body
    except SyntaxError:
        return False
    if isinstance(node, ast.Tuple):
        return content.startswith("(") and _enclosed(content)
    return isinstance(node, _ATOMS)


def _membership(content: str) -> bool:
    """Whether ``content`` is one membership test (``x in (a, b)``), as PLR1714 writes it."""
    try:
        node = syntax.parse(content, mode="eval").body
    except SyntaxError:
        return False
    return isinstance(node, ast.Compare) and [type(op) for op in node.ops] in ([ast.In], [ast.NotIn])


def _ungrouped(diagnostic: Mapping[str, Any], module: Source) -> dict[str, Any] | None:
    """The fix with the parentheses around the expression it replaces taken out, where those
    only grouped it (not a call's, nor a class's bases') and its text is an atom; or, for
    PLR1714 and SIM109, a membership test that replaced an ``or`` inside an ``and`` (tabulate's
    ``(row_type in (list, str)) and (...)``: a comparison binds tighter than ``and``, and the
    reviewer sent back the parentheses left over)."""
    edits = fix_edits(module.text, diagnostic)
    if len(edits) != 1:
        return None
    start, end, content = edits[0]
    text = module.text
    row = location_of(module, start)["row"]
    node = next(
        (n for n in module.at(row, (ast.expr,)) if (module.start(n), module.end(n)) == (start, end)), None
    )
    parent = module.parents.get(node) if node is not None else None
    tested = isinstance(node, ast.BoolOp) and isinstance(parent, ast.BoolOp) and _membership(content)
    if node is None or not (_atom(content) or tested):
        return None
    message = str((diagnostic.get("fix") or {}).get("message") or "")
    unpacked = _copy_unpacked(module, node, parent, content)
    if unpacked is not None:  # feedparser's build_opener(*tuple(handlers + [_FeedURLHandler()]))
        return unsafe_fix(
            module, message, [(module.start(unpacked), module.end(unpacked), _elements(content))]
        )
    if isinstance(parent, ast.Call) and node in parent.args:
        return None
    if isinstance(parent, ast.ClassDef) and node in parent.bases:
        return None
    elements = _elements(content) if _tuple_display(content) else None
    opening = len(text[:start].rstrip())
    if isinstance(parent, ast.Starred) and elements is not None and text[:opening].endswith("*"):
        return unsafe_fix(module, message, [(opening - 1, end, elements)])  # lark's *a + (b,)
    closing = end + len(text[end:]) - len(text[end:].lstrip())
    if not text[:opening].endswith("(") or not text.startswith(")", closing):
        return None
    if isinstance(parent, ast.Starred) and text[: opening - 1].endswith("*") and elements is not None:
        return unsafe_fix(module, message, [(opening - 2, closing + 1, elements)])
    before = text[opening - 2 : opening - 1]
    after = text[closing + 1 : closing + 2]
    spaced = (" " if before.isidentifier() else "") + content + (" " if after.isidentifier() else "")
    return unsafe_fix(module, message, [(opening - 1, closing + 1, spaced)])


def _elements(content: str) -> str:
    """The elements of the display ``content`` (``[*handlers, h]``: ``*handlers, h``)."""
    return content.strip()[1:-1].strip().rstrip(",").rstrip()


def _copy_unpacked(
    module: Source, node: ast.expr, parent: ast.AST | None, content: str
) -> ast.Starred | None:
    """The starred argument or element that unpacks a ``tuple()`` or ``list()`` copy of ``node``
    (``*tuple(handlers + [h])``), where ``content``, the fix's text for ``node``, is a list or
    tuple display: unpacking iterates the display's elements once either way, so they take the
    starred copy's place (``*handlers, h``). A reviewer sent back feedparser 6.0.14's
    ``build_opener(*tuple([*handlers, _FeedURLHandler()]))``, a list copied to a tuple only to be
    unpacked."""
    if not (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Name)
        and parent.func.id in ("tuple", "list")
        and parent.args == [node]
        and not parent.keywords
        and not _rebinds(module.text, parent.func.id)
    ):
        return None
    starred = module.parents.get(parent)
    holder = module.parents.get(starred) if isinstance(starred, ast.Starred) else None
    inside = isinstance(holder, ast.Call) and starred in holder.args
    if not isinstance(starred, ast.Starred) or not (
        inside or isinstance(holder, ast.List | ast.Tuple | ast.Set)
    ):
        return None
    try:
        display = syntax.parse(content.strip(), mode="eval").body
    except SyntaxError:
        return None
    if isinstance(display, ast.Tuple) and not _tuple_display(content):
        return None
    return starred if isinstance(display, ast.List | ast.Tuple) and display.elts else None


def _tuple_display(content: str) -> bool:
    """Whether ``content`` is a tuple display in its own parentheses (``(*args, d)``): an
    :func:`_atom` that is a tuple."""
    return _atom(content) and isinstance(syntax.parse(content, mode="eval").body, ast.Tuple)


def _constant(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    return isinstance(node, ast.Constant)


def _unpacks_constants(statement: ast.Assign) -> set[str]:
    """The names ``statement`` binds where it is ``a, b = 1, 2`` (constants into names)."""
    [target] = statement.targets if len(statement.targets) == 1 else [None]
    value = statement.value
    if not (
        isinstance(target, ast.Tuple | ast.List)
        and isinstance(value, ast.Tuple | ast.List)
        and len(target.elts) == len(value.elts)
        and all(_constant(element) for element in value.elts)
    ):
        return set()
    names = {name.id for name in target.elts if isinstance(name, ast.Name)}
    return names if len(names) == len(target.elts) else set()


def _reads(scope: ast.AST, names: set[str]) -> bool:
    """Whether ``scope`` reads any of ``names`` (ruff leaves names ``locals()`` may read unflagged)."""
    return any(
        isinstance(node, ast.Name) and node.id in names and not isinstance(node.ctx, ast.Store)
        for node in ast.walk(scope)
    )


def _dead_constants(diagnostic: Mapping[str, Any], module: Source) -> dict[str, Any] | None:
    """A deletion of the statement ``a, b = 1, 2`` whose unpacked names (one of them the
    finding's) none of its function reads; it stands alone on its lines, beside other
    statements of its block."""
    row = row_of(diagnostic)
    for statement in module.at(row, (ast.Assign,)):
        names = _unpacks_constants(statement)
        block = module.parents.get(statement)
        scope = block
        while scope is not None and not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
            scope = module.parents.get(scope)
        body = getattr(block, "body", [])
        if not names or scope is None or statement not in body or len(body) < 2 or _reads(scope, names):
            return None
        return _deletion(module, statement, "Remove the unused constants")
    return None


def _deletion(module: Source, statement: ast.stmt, message: str) -> dict[str, Any] | None:
    """A fix deleting the lines of ``statement``, where it stands alone on them."""
    line_start = module.starts[statement.lineno - 1]
    line_end = module.starts[min(statement.end_lineno or statement.lineno, len(module.lines))]
    beside = module.text[line_start : module.start(statement)] + module.text[module.end(statement) : line_end]
    return None if beside.strip() else unsafe_fix(module, message, [(line_start, line_end, "")])


def _siblings(module: Source, statement: ast.stmt) -> list[ast.stmt]:
    """The statements of the block ``statement`` stands in."""
    parent = module.parents.get(statement)
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and statement in block:
            return block
    return []


def _declared_above(diagnostic: Mapping[str, Any], module: Source) -> dict[str, Any] | None:
    """SIM108's assignment with the bare annotation just above its ``if`` (``sender_id:
    c.Hashable``, nothing but blank lines between) written as one annotated assignment, which
    takes the declaration's place: blinker's ``connect()`` already reads so, and the reviewer
    sent back the declaration left dangling above the conditional expression."""
    edits = fix_edits(module.text, diagnostic)
    if len(edits) != 1:
        return None
    start, end, content = edits[0]
    for statement in module.at(location_of(module, start)["row"], (ast.If,)):
        block = _siblings(module, statement)
        index = block.index(statement) if statement in block else 0
        above = block[index - 1] if index else None
        if not (
            isinstance(above, ast.AnnAssign)
            and above.value is None
            and isinstance(above.target, ast.Name)
            and module.start(statement) == start
            and not module.text[module.end(above) : start].strip()
            and content.startswith(f"{above.target.id} = ")
        ):
            return None
        annotation = module.text[module.start(above.annotation) : module.end(above.annotation)]
        value = content[len(above.target.id) + 3 :]
        message = str((diagnostic.get("fix") or {}).get("message") or "")
        return unsafe_fix(
            module, message, [(module.start(above), end, f"{above.target.id}: {annotation} = {value}")]
        )
    return None


def _dead_expression(diagnostic: Mapping[str, Any], module: Source) -> dict[str, Any] | None:
    """F841's fix as the deletion of the whole statement, where ruff's would leave its value as
    a bare expression that only reads (``full_content[:-len(text)]``, ``attrs['toc']``: the
    reviewer asked to delete the line); the statement stands alone on its lines, beside other
    statements of its block."""
    edits = fix_edits(module.text, diagnostic)
    if len(edits) != 1 or edits[0][2]:
        return None
    start = edits[0][0]
    for statement in module.at(location_of(module, start)["row"], (ast.Assign, ast.AnnAssign)):
        block = _siblings(module, statement)
        value = statement.value
        if module.start(statement) != start or value is None or not reads_only(value) or len(block) < 2:
            return None
        return _deletion(module, statement, "Remove the unused assignment")
    return None


def _unused(diagnostic: Mapping[str, Any], module: Source) -> dict[str, Any] | None:
    return _dead_constants(diagnostic, module) or _dead_expression(diagnostic, module)


_THROWAWAYS = ("_", "__")


def _throwaway(module: Source) -> str | None:
    """The name the file binds for values it throws away (``for _ in``, ``_, token = ...``)
    and never reads; None where it binds neither, or reads the one it binds (gettext's ``_``)."""
    stored: set[str] = set()
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Name) and node.id in _THROWAWAYS:
            if not isinstance(node.ctx, ast.Store):
                return None
            stored.add(node.id)
    return next((name for name in _THROWAWAYS if name in stored), None)


def _renamed_throwaway(diagnostic: Mapping[str, Any], module: Source) -> dict[str, Any] | None:
    """B007's and RUF059's rename of an unused name to ``_name`` (prettytable's ``for _i in``,
    sqlparse's ``_pidx, prev_ = ...``) written with the name the file already throws values
    away with, ``_`` (or ``__``): the reviewer sent back the ``_name`` form in files whose other
    loops and unpackings say ``for _ in`` and ``_, token``."""
    edits = fix_edits(module.text, diagnostic)
    name = _throwaway(module)
    if name is None or len(edits) != 1:
        return None
    start, end, content = edits[0]
    old = module.text[start:end]
    if not old.isidentifier() or content != f"_{old}":
        return None
    return unsafe_fix(module, f"Rename unused `{old}` to `{name}`", [(start, end, name)])


def _unused_first(
    diagnostic: Mapping[str, Any], module: Source
) -> tuple[ast.Name, ast.expr, ast.expr] | None:
    """Where B007's fix renames ``_name`` the first of a loop's two names (``for idx, p in
    ...``): that name, the other, and what the loop iterates."""
    edits = fix_edits(module.text, diagnostic)
    if len(edits) != 1:
        return None
    start, end, content = edits[0]
    for loop in module.at(row_of(diagnostic), (ast.For, ast.AsyncFor)):
        target = loop.target
        if (
            isinstance(target, ast.Tuple)
            and len(target.elts) == 2
            and isinstance(first := target.elts[0], ast.Name)
            and (module.start(first), module.end(first)) == (start, end)
            and content == f"_{first.id}"
        ):
            return first, target.elts[1], loop.iter
    return None


def _one_name_loop(
    module: Source, found: tuple[ast.Name, ast.expr, ast.expr], iterated: str, message: str
) -> dict[str, Any]:
    """The loop of ``found`` (:func:`_unused_first`) over ``iterated`` with its second name only."""
    first, second, over = found
    target = module.parents[first]
    edits = [
        (module.start(target), module.end(target), module.text[module.start(second) : module.end(second)]),
        (module.start(over), module.end(over), iterated),
    ]
    return unsafe_fix(module, message, edits)


def _dropped_enumerate(diagnostic: Mapping[str, Any], module: Source) -> dict[str, Any] | None:
    """B007's unused index of ``for idx, p in enumerate(patterns):`` dropped with the
    ``enumerate``, ``for p in patterns:``, rather than renamed ``_idx``: a reviewer sent back the
    rename that kept the pointless ``enumerate`` (pexpect 4.9.0's ``compile_pattern_list``). Not
    in a file that binds the name ``enumerate`` itself."""
    found = _unused_first(diagnostic, module)
    if found is None or _rebinds(module.text, "enumerate"):
        return None
    index, _, iterated = found
    if not (
        isinstance(iterated, ast.Call)
        and isinstance(iterated.func, ast.Name)
        and iterated.func.id == "enumerate"
        and len(iterated.args) == 1
        and not isinstance(iterated.args[0], ast.Starred)
        and not iterated.keywords
    ):
        return None
    sequence = iterated.args[0]
    text = module.text[module.start(sequence) : module.end(sequence)]
    return _one_name_loop(module, found, text, f"Drop the unused index `{index.id}` and its `enumerate`")


def _values_only(diagnostic: Mapping[str, Any], module: Source) -> dict[str, Any] | None:
    """B007's unused key of ``for key, val in self.items():`` dropped with the ``items``,
    ``for val in self.values():``, rather than renamed ``_key``: a reviewer asked for it (addict
    2.4.0's ``Dict.freeze``)."""
    found = _unused_first(diagnostic, module)
    if found is None:
        return None
    key, _, iterated = found
    if not (
        isinstance(iterated, ast.Call)
        and isinstance(iterated.func, ast.Attribute)
        and iterated.func.attr == "items"
        and not iterated.args
        and not iterated.keywords
    ):
        return None
    mapping = iterated.func.value
    text = module.text[module.start(mapping) : module.end(mapping)] + ".values()"
    return _one_name_loop(module, found, text, f"Drop the unused key `{key.id}`: iterate the values")


def _unused_loop_name(diagnostic: Mapping[str, Any], module: Source) -> dict[str, Any] | None:
    return (
        _dropped_enumerate(diagnostic, module)
        or _values_only(diagnostic, module)
        or _renamed_throwaway(diagnostic, module)
    )


def _unused_unpacked(diagnostic: Mapping[str, Any], module: Source) -> dict[str, Any] | None:
    return _dead_constants(diagnostic, module) or _renamed_throwaway(diagnostic, module)


def _blank_run(lines: Sequence[str], indexes: range) -> int:
    """How many of ``lines`` at ``indexes``, in order, are blank before the first that is not."""
    count = 0
    for index in indexes:
        if lines[index].strip():
            break
        count += 1
    return count


def _one_gap(diagnostic: Mapping[str, Any], module: Source) -> dict[str, Any] | None:
    """UP036's removal of a whole version block leaves one gap of blank lines where two met,
    the wider of them: pyasn1 0.6.0's ``if sys.version_info[0] <= 2: def __long__`` left two
    blank lines between ``__int__`` and ``__float__`` (a reviewer's EDIT)."""
    edits = fix_edits(module.text, diagnostic)
    if len(edits) != 1:
        return None
    start, end, content = edits[0]
    lines, starts = module.lines, module.starts
    if content or start not in starts or end not in starts:
        return None
    first, after = starts.index(start), starts.index(end)
    before = _blank_run(lines, range(first - 1, -1, -1))
    following = _blank_run(lines, range(after, len(lines)))
    if not min(before, following):
        return None
    stop = starts[after + min(before, following)]
    return unsafe_fix(module, "Remove outdated version block", [(start, stop, "")])


def _yield_from_aligned(diagnostic: Mapping[str, Any], module: Source) -> dict[str, Any] | None:
    """UP028's ``yield from`` for a ``for`` loop whose iterable's lines are aligned under its
    first line, with those lines moved as far as the iterable moved: autopep8 2.3.2's
    ``for candidate in _shorten_line(tokens=tokens,`` became ``yield from _shorten_line(`` with
    its five arguments left under the old bracket (a reviewer's EDIT)."""
    edits = fix_edits(module.text, diagnostic)
    loops = list(module.at(row_of(diagnostic), (ast.For,)))
    if len(edits) != 1 or len(loops) != 1 or loops[0].iter.lineno == loops[0].iter.end_lineno:
        return None
    start, end, content = edits[0]
    head, *rest = content.split("\n")
    if not head.startswith(_YIELD_FROM):
        return None
    step = loops[0].iter.col_offset - (loops[0].col_offset + len(_YIELD_FROM))
    indents = [len(line) - len(line.lstrip(" ")) for line in rest if line.strip()]
    if step <= 0 or not indents or min(indents) <= loops[0].iter.col_offset:
        return None
    moved = [line[step:] if line.strip() else line for line in rest]
    message = str((diagnostic.get("fix") or {}).get("message", ""))
    return unsafe_fix(module, message, [(start, end, "\n".join([head, *moved]))])


_YIELD_FROM = "yield from "


_RESHAPED: dict[str, Callable[[Mapping[str, Any], Source], dict[str, Any] | None]] = {
    "UP028": _yield_from_aligned,
    "UP036": _one_gap,
    "SIM108": _declared_above,
    "RUF005": _ungrouped,
    "UP031": _ungrouped,
    "PLR1714": _ungrouped,
    "SIM109": _ungrouped,
    "SIM101": _ungrouped,
    "F841": _unused,
    "RUF059": _unused_unpacked,
    "B007": _unused_loop_name,
}
"""Rules whose fixes may be replaced by another edit of the file, and how (None: kept)."""


_FSTRINGS = (3, 6)
"""The first Python with f-strings."""


def _any_of(content: str, _text: str, _lowest: Version | None) -> str:
    """``content`` with each ``any(x for x in items)`` (SIM110's generator of the loop's own
    variable, where the loop tested it bare) as ``any(items)``."""
    lead = len(content) - len(content.lstrip())
    try:
        module = Source(content.strip())
    except (SyntaxError, ValueError):
        return content
    spans = [
        (lead + module.start(generator), lead + module.end(generator), loop.iter)
        for node in ast.walk(module.tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("any", "all")
        and len(node.args) == 1
        and not node.keywords
        and isinstance(generator := node.args[0], ast.GeneratorExp)
        and len(generator.generators) == 1
        and not (loop := generator.generators[0]).ifs
        and not loop.is_async
        and isinstance(loop.target, ast.Name)
        and isinstance(generator.elt, ast.Name)
        and generator.elt.id == loop.target.id
    ]
    if len(spans) != 1:
        return content  # none, or one inside another's items: left as ruff wrote it
    start, end, items = spans[0]
    written = content[lead + module.start(items) : lead + module.end(items)]
    if content[start] == "(":  # the call's parentheses, which a lone generator's span takes
        written = f"({written})"
    return f"{content[:start]}{written}{content[end:]}"


def _tupled(content: str, _text: str, _lowest: Version | None) -> str:
    """``content`` with each membership test's set display (``x in {'a', 'b'}``) a tuple."""
    lead = len(content) - len(content.lstrip())  # a reshaped fix's spacing (``_ungrouped``)
    try:
        module = Source(content.strip())
    except (SyntaxError, ValueError):
        return content
    spans = [
        (lead + module.start(node.comparators[0]), lead + module.end(node.comparators[0]))
        for node in ast.walk(module.tree)
        if isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], (ast.In, ast.NotIn))
        and isinstance(node.comparators[0], ast.Set)
    ]
    for start, end in sorted(spans, reverse=True):
        if content[start] == "{" and content[end - 1] == "}":
            content = f"{content[:start]}({content[start + 1 : end - 1]}){content[end:]}"
    return content


_PLAIN_ARGUMENTS = (ast.Name, ast.Attribute, ast.Subscript, ast.Call)


def _quoted_string(node: ast.expr, source: str) -> tuple[str, str, str] | None:
    """The prefix, quote and body of ``node``'s source, where it is one plain or raw string
    literal in single quotes of one kind (not triple-quoted, not implicitly concatenated)."""
    match = re.fullmatch(r"([rR]?)(['\"])(.*)\2", source, re.DOTALL)
    if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or match is None:
        return None
    prefix, quote, body = match.groups()
    if quote * 2 in source[len(prefix) : len(prefix) + 2] or re.search(rf"(?<!\\){quote}", body):
        return None  # triple-quoted, or two literals side by side
    return prefix, quote, body


def _keys_only(argument: ast.expr) -> bool:
    """Whether every string literal in ``argument`` is a subscript's key (``t['value']``): a
    call's string argument inside an f-string (``{'|'.join(names)}``) a reviewer found harder to
    read than the ``%`` it replaced."""
    keys = {id(node.slice) for node in ast.walk(argument) if isinstance(node, ast.Subscript)}
    return all(
        id(node) in keys
        for node in ast.walk(argument)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    )


_T = TypeVar("_T")


def _format_call(content: str) -> tuple[str, ast.Call, tuple[str, str, str]] | None:
    """``content`` stripped, its ``'...'.format(args)`` call (positional arguments only, none
    starred, on one plain string literal: :func:`_quoted_string`) and that literal's prefix,
    quote and body; None for any other text."""
    stripped = content.strip()
    try:
        call = syntax.parse(stripped, mode="eval").body
    except SyntaxError:
        return None
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "format"
        and not call.keywords
        and not any(isinstance(arg, ast.Starred) for arg in call.args)
    ):
        return None
    quoted = _quoted_string(call.func.value, ast.get_source_segment(stripped, call.func.value) or "")
    return (stripped, call, quoted) if quoted is not None else None


def _paired_fields(body: str, arguments: Sequence[_T]) -> list[tuple[str, tuple[str, str, _T] | None]] | None:
    """Each literal text of the format string ``body`` (its braces doubled again) with the
    ``{}`` field after it, if any: the field's conversion, its spec and its argument, in order;
    None where a field is named or numbered, a spec holds a field of its own, or the fields and
    ``arguments`` differ in number."""
    try:
        fields = list(string.Formatter().parse(body))
    except ValueError:
        return None
    pending = iter(arguments)
    paired: list[tuple[str, tuple[str, str, _T] | None]] = []
    for text, name, spec, conversion in fields:
        literal = text.replace("{", "{{").replace("}", "}}")
        if name is None:
            paired.append((literal, None))
            continue
        argument = next(pending, None)
        if name != "" or argument is None or "{" in (spec or ""):
            return None
        paired.append((literal, (conversion or "", spec or "", argument)))
    return paired if next(pending, None) is None else None


def _field(expression: str, conversion: str, spec: str) -> str:
    """``{expression!conversion:spec}``, each part where it is given."""
    return "{" + expression + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"


def _respaced(content: str, written: str) -> str:
    """``written`` with the spaces around ``content`` it replaces."""
    return content[: len(content) - len(content.lstrip())] + written + content[len(content.rstrip()) :]


def _fstring(content: str, _text: str, lowest: Version | None) -> str:
    """``content`` (ruff's ``'...'.format(args)``) as an f-string, for a codebase whose lowest
    Python has f-strings, where an argument holds a string literal and every field is a plain
    ``{}`` (see the module docstring); else as it is."""
    found = _format_call(content) if lowest is None or lowest >= _FSTRINGS else None
    if found is None:
        return content
    stripped, call, (prefix, quote, body) = found
    if not all(isinstance(arg, _PLAIN_ARGUMENTS) and _keys_only(arg) for arg in call.args):
        return content
    arguments = [ast.get_source_segment(stripped, arg) or "" for arg in call.args]
    if not any("'" in arg or '"' in arg for arg in arguments):
        return content
    if any(quote in arg for arg in arguments):
        quote = "'" if quote == '"' else '"'
    if quote in body or any(set(arg) & {quote, "\\", "\n", "#", "{", "}"} for arg in arguments):
        return content  # what an f-string's expression may not hold before Python 3.12
    paired = _paired_fields(body, arguments)
    if paired is None:
        return content
    written = "".join(text + (_field(field[2], *field[:2]) if field else "") for text, field in paired)
    return _respaced(content, f"{prefix}f{quote}{written}{quote}")


_CONVERSIONS = {"repr": "r", "ascii": "a", "str": "s"}
"""The builtins a ``str.format`` field's conversion calls: ``{!r}`` formats ``repr(value)``
(``{!s}``, not ``{}``, for ``str(value)``: an ``IntEnum`` member formats as its number)."""


def _conversion(argument: ast.expr, text: str) -> tuple[str, ast.expr] | None:
    """The conversion and value of ``argument`` where it only calls :data:`_CONVERSIONS`'
    builtin on one value (``repr(x)``: ``r`` and ``x``), in a file ``text`` that does not bind
    the name itself."""
    if (
        isinstance(argument, ast.Call)
        and isinstance(argument.func, ast.Name)
        and argument.func.id in _CONVERSIONS
        and len(argument.args) == 1
        and not isinstance(argument.args[0], ast.Starred)
        and not argument.keywords
        and not _rebinds(text, argument.func.id)
    ):
        return _CONVERSIONS[argument.func.id], argument.args[0]
    return None


def _converted(content: str, text: str, _lowest: Version | None) -> str:
    """``content`` (ruff's ``'<%s>' % repr(x)`` written ``'<{}>'.format(repr(x))``, on one line)
    with each plain ``{}`` field whose argument is a call of ``repr``, ``ascii`` or ``str``
    converting the value itself, ``'<{!r}>'.format(x)``, so the f-string ruff then writes reads
    ``f'<{x!r}>'``, not ``f'<{repr(x)}>'`` (RUF010's form); else as it is. ``format(repr(x),
    '')`` is ``repr(x)``: the text is the same."""
    found = _format_call(content) if "\n" not in content.strip() else None
    if found is None:
        return content
    stripped, call, (prefix, quote, body) = found
    paired = _paired_fields(body, call.args)
    if paired is None:
        return content
    written, arguments, converted = [], [], False
    for literal, field in paired:
        written.append(literal)
        if field is None:
            continue
        conversion, spec, value = field
        plain = None if conversion or spec else _conversion(value, text)
        if plain is not None:
            (conversion, value), converted = plain, True
        written.append(_field("", conversion, spec))
        arguments.append(ast.get_source_segment(stripped, value) or "")
    if not converted:
        return content
    return _respaced(content, f"{prefix}{quote}{''.join(written)}{quote}.format({', '.join(arguments)})")


_BARE_FIELDS = frozenset({"{}", "{0}", "{!s}"})
"""Format strings that are one field of ``str()`` and nothing else."""


def _format_of(content: str) -> ast.Call | None:
    """The ``....format(...)`` call ``content`` is, if it is one."""
    try:
        node = syntax.parse(content, mode="eval").body
    except (SyntaxError, ValueError):
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return node
    return None


def _bare_str(content: str, text: str) -> str:
    """UP031's ``'{}'.format(value)`` (for ``'%s' % value``) as ``str(value)``: a reviewer sent
    back jsonpath-ng 1.6.1's ``f'{self.target}'`` (ruff's f-string of it), a format with nothing
    around its one field. Not in a file that binds the name ``str``."""
    node = _format_of(content)
    if not (
        node is not None
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Constant)
        and node.func.value.value in _BARE_FIELDS
        and len(node.args) == 1
        and not isinstance(node.args[0], ast.Starred)
        and not node.keywords
        and not _rebinds(text, "str")
    ):
        return content
    return f"str({ast.get_source_segment(content, node.args[0])})"


_NAMESPACES = frozenset({"locals", "vars"})
"""Calls that give a format the names in scope (``vars()`` with no argument is ``locals()``)."""
_FIELD_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
"""A field an f-string reads as ``str.format`` does: a name, perhaps with attributes (not
``[key]``, which ``str.format`` reads as a string and an f-string as an expression)."""
_STRING_TOKEN = re.compile(r"([rR]?)('\'\'|\"\"\"|'|\")(.*)\2", re.DOTALL)


def _scope_format(content: str, text: str) -> tuple[str, int] | None:
    """``content`` stripped and where its ``.format`` begins, where it is ruff's UP031 fix of a
    ``%`` format of the names in scope: ``'...'.format(**locals())`` (or ``**vars()``), no other
    argument, in a file ``text`` that does not bind the call's name itself."""
    stripped = content.strip()
    call = _format_of(stripped)
    if call is None or call.args or len(call.keywords) != 1 or call.keywords[0].arg is not None:
        return None
    scope = call.keywords[0].value
    if not (
        isinstance(scope, ast.Call)
        and isinstance(scope.func, ast.Name)
        and scope.func.id in _NAMESPACES
        and not scope.args
        and not scope.keywords
        and not _rebinds(text, scope.func.id)
    ):
        return None
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(stripped).readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    dots = [
        offset_of(stripped, {"row": first.start[0], "column": first.start[1] + 1})
        for first, second in itertools.pairwise(tokens)
        if first.string == "." and second.string == "format"
    ]
    return (stripped, dots[-1]) if dots else None


def _named_piece(token: str) -> str | None:
    """The string literal ``token`` (ruff's format string, or one of its implicitly joined
    pieces) as an f-string reading its named fields from scope, or as a plain literal where it
    has no field; None where a field is not a name (:data:`_FIELD_NAME`), the literal is bytes,
    or it holds an escape an f-string reads otherwise (``\\N{...}``)."""
    match = _STRING_TOKEN.fullmatch(token)
    if match is None:
        return None
    prefix, quote, body = match.groups()
    if not prefix and "\\N{" in body:
        return None
    try:
        fields = list(string.Formatter().parse(body))
    except ValueError:
        return None
    named = [name for _, name, _, _ in fields if name is not None]
    for name, spec in ((name, spec) for _, name, spec, _ in fields if name is not None):
        if not _FIELD_NAME.fullmatch(name) or keyword.iskeyword(name.split(".")[0]) or "{" in (spec or ""):
            return None
    if not named:
        return f"{prefix}{quote}{body.replace('{{', '{').replace('}}', '}')}{quote}"
    return f"{prefix}f{quote}{body}{quote}"


def _from_scope(content: str, text: str, lowest: Version | None) -> str:
    """UP031's ``'{name}'.format(**locals())`` (for ``'%(name)s' % locals()``, which the verdict
    drops as a ``.format()`` call) as the f-string ``f'{name}'``, for a codebase whose lowest
    Python has f-strings; else as it is. Each field reads the same name the format looked up
    in the scope's names, formatted the same way (``format(value, spec)``); oauthlib 4.0.1's
    ``uri_validate`` builds its 29 regular expressions so."""
    found = _scope_format(content, text) if lowest is None or lowest >= _FSTRINGS else None
    if found is None:
        return content
    stripped, dot = found
    head = stripped[:dot]
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(head).readline))
    except (tokenize.TokenError, SyntaxError):
        return content
    written, at, pieces = [], 0, 0
    for token in tokens:
        if token.type != tokenize.STRING:
            continue
        piece = _named_piece(token.string)
        if piece is None:
            return content
        start = offset_of(head, {"row": token.start[0], "column": token.start[1] + 1})
        written += [head[at:start], piece]
        at, pieces = start + len(token.string), pieces + piece.startswith(("f", "rf", "Rf"))
    if not pieces:
        return content
    return _respaced(content, "".join([*written, head[at:]]))


def _up031(content: str, text: str, lowest: Version | None) -> str:
    """UP031's ``.format()`` call as ``str()`` where it is nothing else (:func:`_bare_str`), as an
    f-string where it formats the names in scope (:func:`_from_scope`), else with its
    conversions (:func:`_converted`), then as an f-string where ruff's UP032 would not write one
    (:func:`_fstring`)."""
    bare = _bare_str(content, text)
    if bare != content:
        return bare
    scoped = _from_scope(content, text, lowest)
    return scoped if scoped != content else _fstring(_converted(content, text, lowest), text, lowest)


REFINED: dict[str, Callable[[str, str, Version | None], str]] = {
    "SIM108": _sim108,
    "SIM212": _sim108,
    "RUF005": _ruf005,
    "PLR1714": _tupled,
    "UP031": _up031,
    "SIM110": _any_of,
}
"""Rules whose fixes' texts are refined, and how (a fix's text, the file's text and the
codebase's lowest Python, where known, in; the text out)."""


def refine(
    diagnostic: Mapping[str, Any], text: str, module: Source | None = None, lowest: Version | None = None
) -> dict[str, Any]:
    """``diagnostic`` (a ruff finding with a fix, on the file's ``text``, parsed as ``module``
    where it parses, in a codebase whose lowest Python is ``lowest`` where known) with its fix
    refined (see the module docstring); unchanged for any other rule."""
    code = str(diagnostic.get("code"))
    reshape = _RESHAPED.get(code)
    refined = dict(diagnostic)
    if reshape is not None and module is not None:
        fix = reshape(diagnostic, module)
        if fix is not None:
            refined["fix"] = {**(diagnostic.get("fix") or {}), **fix}
    refiner = REFINED.get(code)
    fix = refined.get("fix")
    if refiner is None or not isinstance(fix, Mapping):
        return refined
    edits = [
        {**edit, "content": refiner(str(edit.get("content", "")), text, lowest)}
        if edit.get("content")
        else dict(edit)
        for edit in fix.get("edits") or []
    ]
    return {**refined, "fix": {**fix, "edits": edits}}
