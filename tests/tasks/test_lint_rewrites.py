"""Candidates for findings ruff has no fix for: each on real ruff output, applied, compiled and
checked again by ruff (the finding is gone, nothing else appears)."""

from __future__ import annotations

from enum import IntEnum
from pathlib import Path
from typing import Any

import pytest
from tasks.ruff_json import ruff_json

from structured_agents.tasks.lint_fixes import apply_changes, fixes
from structured_agents.tasks.lint_rewrites import CANDIDATE_RULES, DECLINED, with_candidates
from structured_agents.tasks.lint_settings import lint_settings
from structured_agents.tasks.lint_source import Source, row_of
from structured_agents.tasks.old_syntax import older_syntax
from structured_agents.tasks.one_line_blocks import one_line_block
from structured_agents.tasks.ruff import ruff_diagnostics, ruff_safe_fixes

RAISES = "def f(d):\n    try:\n        return d['k']\n    except KeyError as e:\n        raise ValueError(e)"
RAISES_ANY = (
    RAISES.replace("'k'", "'é'")
    .replace("KeyError as e:", "(KeyError, IndexError):")
    .replace("ValueError(e)", "ValueError('é')")
)
BOUND = RAISES_ANY.replace("IndexError):", "IndexError) as err:")
PARSED = RAISES.replace("return d['k']", "return int(d)").replace("KeyError as e", "ValueError as e")
ASSERTED = RAISES.replace("return d['k']", "assert d, 'empty'").replace(
    "KeyError as e", "AssertionError as e"
)
NESTED = (  # munch 4.0.0's __getattr__
    "def f(self, k):\n    try:\n        return object.__getattribute__(self, k)\n"
    "    except AttributeError:\n        try:\n            return self[k]\n"
    "        except KeyError:\n            raise AttributeError(k)"
)
NESTED_BOUND = NESTED.replace("except KeyError:", "except KeyError as err:")
CALLED = (  # lark 1.1.9's _deserialize: the miss may come from deep in the call
    "def f(ns, data, memo):\n    try:\n        return ns[data['t']].deserialize(data, memo)\n"
    "    except KeyError as e:\n        raise ValueError(data['t'])"
)
STEPPED = RAISES.replace("return d['k']", "return next(iter(d))").replace("KeyError", "StopIteration")
RERAISED = (  # lark 1.1.9's lexer: the outer error raised again, the inner one dropped on purpose
    "def f(lex, e):\n    try:\n        return lex.next()\n    except ValueError:\n        raise e"
)
BARE_CLASS = PARSED.replace("raise ValueError(e)", "raise KeyError")
TYPES = "def f(row):\n    kind = type(row)\n    return kind == list or type(row) != (str)\n"
ELSE_IF = (
    "def f(a, b):\n    if a:\n        return 1\n    else:\n        if b:\n            return 2\n"
    "        else:\n            return 3\n"
)
LOOP = (
    "def f(lines):\n    out = []\n    for line in lines:\n        line = line.strip()\n"
    "        if line:\n            out.append(line)\n    return out\n"
)

ONE_LINERS = (
    "class Error(Exception): pass\n\n\ndef f(data, key):\n  if not data: return None  # none\n"
    "  try: v = data[key]\n  except KeyError: v = 0\n  else: v += 1\n"
    "  for k in data: print(k); print(v)\n  return v\n"
)
SPLIT = [  # each finding's candidate, at the file's own two-space step
    ("Exception): pass", "Exception):\n  pass"),
    ("data: return", "data:\n    return"),
    ("try: v", "try:\n    v"),
    ("KeyError: v", "KeyError:\n    v"),
    ("else: v", "else:\n    v"),
    ("data: print", "data:\n    print"),
]
EMPTY = "def f(d, k):\n    try:\n        return d[k]\n    except KeyError:\n        raise KeyError()"
EXC_INFO_KEPT = (
    "import sys\n\n\ndef f(v, e):\n    try:\n        return v.decode(e)\n    except LookupError:\n"
    "        exc = sys.exc_info()[1]\n        raise ValueError('cannot decode', exc)"
)
EXC_INFO_READ = (
    "import sys\n\n\ndef f(c, i):\n    try:\n        return c.get(i)\n    except c.Error:\n"
    "        raise IndexError(sys.exc_info()[1])"
)
EXC_INFO_BOUND = EXC_INFO_READ.replace("c.Error:", "c.Error as err:").replace("(sys.exc_info()[1])", "(err)")
QUIET = (
    "def g(s):\n    try:\n        return float(s)\n    except ValueError:\n"
    "        raise ValueError(f'bad {s}') from None\n\n\n"
)
SAME_HANDLER = (  # bitstring 5.0.0's __setattr__: the fallback's other raise says from None
    "def f(self, a, v):\n    try:\n        setattr(self, a, v)\n    except AttributeError:\n"
    "        if a:\n            raise ValueError('no length') from None\n"
    "        raise AttributeError('cannot be set')"
)
SAME_BOUND = SAME_HANDLER.replace("AttributeError:", "AttributeError as err:")
TABBED = "def f(x):\n\tif x: return 1\n\treturn 0\n"
SHARED = (  # ply 3.11's cpp.py, and three on a line at module level
    "def t_ws(t):\n    t.type = 'WS'; t.value = ' '\n    return t\n\n\na = 1; b = 2;  c = 3  # three\n"
)
APART = [
    ("'WS'; t.value", "'WS'\n    t.value"),
    ("1; b", "1\nb"),
    ("2;  c", "2\nc"),
]


@pytest.mark.parametrize(
    ("path", "rule", "text", "expected"),
    [
        (
            "m.py",
            "E722",
            "def f(job):\n    try:\n        job()\n    except:  # noisy\n        pass\n",
            ["def f(job):\n    try:\n        job()\n    except Exception:  # noisy\n        pass\n"],
        ),
        ("m.py", "B904", RAISES + "\n", [RAISES + " from None\n", RAISES + " from e\n"]),  # a lookup miss
        ("m.py", "B904", RAISES_ANY + "\n", [RAISES_ANY + " from None\n", BOUND + " from err\n"]),
        ("m.py", "B904", PARSED + "\n", [PARSED + " from e\n"]),  # a real cause: never hidden
        # bitstring 5.0.0: the file raises from None as its way, so that comes first
        (
            "m.py",
            "B904",
            QUIET + PARSED + "\n",
            [QUIET + PARSED + " from None\n", QUIET + PARSED + " from e\n"],
        ),
        ("m.py", "B904", SAME_HANDLER + "\n", [SAME_HANDLER + " from None\n", SAME_BOUND + " from err\n"]),
        ("m.py", "B904", NESTED + "\n", [NESTED_BOUND + " from err\n"]),  # from None would hide the outer
        ("m.py", "B904", ASSERTED + "\n", [ASSERTED + " from None\n", ASSERTED + " from e\n"]),  # a check
        ("m.py", "B904", CALLED + "\n", [CALLED + " from e\n"]),  # a call's miss: its traceback shown
        ("m.py", "B904", STEPPED + "\n", [STEPPED + " from None\n", STEPPED + " from e\n"]),  # exhausted
        ("m.py", "B904", BARE_CLASS + "\n", [BARE_CLASS + " from e\n"]),  # a class raised: a new exception
        # pyasn1 0.6.0: a KeyError() that says nothing: from None would hide the key that missed
        ("m.py", "B904", EMPTY + "\n", [EMPTY.replace("KeyError:", "KeyError as err:") + " from err\n"]),
        # pyasn1 0.6.0: the name sys.exc_info()[1] was given, not a second one beside it
        ("m.py", "B904", EXC_INFO_KEPT + "\n", [EXC_INFO_KEPT + " from exc\n"]),
        # pyasn1 0.6.0: what the handler read of sys.exc_info() is the exception it binds
        ("m.py", "B904", EXC_INFO_READ + "\n", [EXC_INFO_BOUND + " from err\n"]),
        ("m.py", "E701", ONE_LINERS, [ONE_LINERS.replace(before, after, 1) for before, after in SPLIT]),
        ("m.py", "E701", TABBED, [TABBED.replace("x: return", "x:\n\t\treturn")]),  # the file's tab
        ("m.py", "E702", SHARED, [SHARED.replace(before, after, 1) for before, after in APART]),
        (
            "m.py",
            "E721",
            TYPES,
            [TYPES.replace("kind == list", "kind is list"), TYPES.replace("!= (str)", "is not (str)")],
        ),
    ],
)
def test_each_candidate_clears_its_finding_and_compiles(
    tmp_path: Path, path: str, rule: str, text: str, expected: list[str]
) -> None:
    found, left = with_candidates(text, ruff_json(tmp_path, path, text, rule), path)

    candidates = [apply_changes(text, [change])[0] for change in fixes(text, found)]

    assert candidates == expected and left == []
    for candidate in candidates:
        compile(candidate, path, "exec")
        assert len(ruff_json(tmp_path, path, candidate, rule)) < len(ruff_json(tmp_path, path, text, rule))


def test_an_exception_object_raised_again_gets_no_cause(tmp_path: Path) -> None:
    """lark 1.1.9's ``raise e`` in a handler of the root lexer's error: ``from err`` made the
    error its comment calls wrong the original's cause; a reviewer sent it back."""
    found, left = with_candidates(
        RERAISED + "\n", ruff_json(tmp_path, "m.py", RERAISED + "\n", "B904"), "m.py"
    )

    assert found == [] and [item["code"] for item in left] == ["B904"]


def test_assert_false_is_not_made_a_raise(tmp_path: Path) -> None:
    """lark 1.1.9's reconstruction: under ``python -O`` its ``assert False`` is skipped and the
    parser raises its own error; ``raise AssertionError()`` would raise that instead."""
    text = "def match(term, token):\n    if isinstance(token, str):\n        assert False\n    return term\n"

    found, left = with_candidates(text, ruff_json(tmp_path, "m.py", text, "B011"), "m.py")

    assert "B011" in DECLINED and found == [] and [item["code"] for item in left] == ["B011"]


def test_a_rule_without_candidates_is_left_not_rewritten(tmp_path: Path) -> None:
    text = "def f(x):\n    if x > 42:\n        return 1\n    return 0\n"
    diagnostics = ruff_json(tmp_path, "m.py", text, "PLR2004")

    found, left = with_candidates(text, diagnostics, "m.py")

    assert "PLR2004" not in CANDIDATE_RULES
    assert found == [] and [item["code"] for item in left] == ["PLR2004"]


SHARED_DEFAULT = """def block(expr, backup_stacks=[]):
    def reset():
        backup_stacks.pop()

    return expr, reset
"""
ALIGNED = """def f(tlist, i):
    ptidx, ptoken = tlist.token_next_by(m=',',
                                        idx=i)
    return ptoken
"""
NESTED_TERNARY = """def place(node, subnode, is_text, kids):
    if not is_text and node is not subnode:
        pos = list(kids).index(subnode) + 1
    else:
        pos = 0
    return pos
"""
"""SIM108's conditional expression runs past 79 columns (Markdown's ran to 88 and 90)."""


@pytest.mark.parametrize(
    ("rule", "text"),
    [
        ("RUF001", 'DASH = "a–b"\n'),  # the escape reads worse and changes nothing
        ("RUF012", "class A:\n    NAMES = ['x']\n"),  # ClassVar in untyped code: noise
        ("SIM118", "def f(row):\n    return [k for k in row.keys()]\n"),  # a pandas Series iterates values
        ("SIM105", "def f(g):\n    try:\n        g()\n    except ValueError:\n        pass\n"),
        (
            "B028",
            "import warnings\n\n\ndef f():\n    warnings.warn('old')\n",
        ),  # stacklevel=2 misses the caller
        ("PLW2901", LOOP),  # new_line: a worse name
        ("PLW3301", "def f(a, xs):\n    return max(a, max(x for x in xs))\n"),
        # tabulate: the comment describes the else branch, and elif moves it above
        ("PLR5501", ELSE_IF.replace("    else:\n", "    else:\n        # single-line values\n", 1)),
        # Markdown 3.6: the run() the nested test calls would hide in the outer test
        (
            "SIM102",
            "def f(p, b):\n    if p.test(b):\n        if p.run(b) is not False:\n            return 1\n",
        ),
        # glob2 0.7's copy of functools._make_key: its defaults are bound once, for speed
        ("B006", "def key(args, fast={int, str}, len=len):\n    return len(args) == 1 and args[0] in fast\n"),
        # glob2 0.7's copy of functools.lru_cache: the name keeps the old value alive
        (
            "F841",
            "def evict(root, cache):\n    old = root[1]\n    root[0] = root[1] = None\n    cache.clear()\n",
        ),
        # tablib 3.6.1: both tests alternatives, joined into (a or b) and (not a or not b)
        ("SIM102", "def f(a, b):\n    if a or b:\n        if not a or not b:\n            raise E\n"),
        # Markdown 3.6: a 90-column conditional expression
        ("SIM108", NESTED_TERNARY),
        # asteval 0.9.31: an evaluator reports all its user's code raises, SystemExit too
        (
            "E722",
            "def evaluate(self, node):\n    try:\n        return self.run(node)\n"
            "    except:\n        return None\n",
        ),
        (
            "E722",
            "def load(code, scope):\n    try:\n        exec(code, scope)\n    except:\n        return None\n",
        ),
        # pathvalidate 3.2.0: a conversion starred in a display, *tuple(f"{n}{i}" for ...)
        ("RUF005", "NAMES = ('CON', 'NUL') + tuple(f'COM{i}' for i in range(1, 10))\n"),
        # wsproto 1.2.0: None moved to the end of a Union, churn
        ("RUF036", "from typing import Union\n\n\ndef f() -> Union[bool, None, str]:\n    return None\n"),
        # Markdown 3.6: braces doubled in a regular expression's f-string, a backslash before a
        # placeholder, a logging call's message
        ("UP031", "import re\n\n\ndef f(n):\n    return re.compile(r'^(([ ]{%s})+)' % (n,))\n"),
        ("UP031", "def f(value):\n    return r'\\%s' % (value,)\n"),
        ("UP031", "def f(logger, block):\n    logger.warning('a problem header: %r' % (block,))\n"),
        # schedule 1.2.2: a conditional expression would stand inside the f-string's field
        (
            "UP031",
            "def f(self):\n    return 'every %s %s' % (self.n, self.u[:-1] if self.n == 1 else self.u)\n",
        ),
        # pyparsing 3.1.2: the calls share backup_stacks on purpose (a closure keeps it)
        ("B006", SHARED_DEFAULT),
        # pyparsing 3.1.2: its __all__ is grouped under comments
        ("RUF022", '__all__ = [\n    "b",\n    "a",\n    # pre-PEP8 names\n    "c",\n]\n'),
        # mistletoe 1.3.0: a conditional expression of two equal branches
        (
            "SIM108",
            "def f(c):\n    if c:\n        t = '{inner}'\n    else:\n        t = '{inner}'\n    return t\n",
        ),
        # hyperlink 21.0.0: a period added to a doctest's expected output (D400), which fails it
        ("D400", 'def f(t):\n    """\n    >>> f(1)\n    \'a\'\n    """\n    return \'a\'\n'),
        ("D212", 'def f(t):\n    """\n    >>> f(1)\n    \'a\'\n    """\n    return \'a\'\n'),
        # parsimonious 0.10.0's Node.__slots__: sorted, each comment stood beside another slot
        ("RUF023", "class Node:\n    __slots__ = [\n        'b',  # 2nd\n        'a',  # 1st\n    ]\n"),
        # pyrsistent 0.20.0: the second argument left off the bracket `.format(` moved to
        (
            "UP030",
            'def f(self):\n    return "{0}({1})".format(self.name,\n'
            '                             ", ".join(self.items))\n',
        ),
        # pyrsistent 0.20.0: the comment says why not `!=` (#268), and SIM201 wrote `!=`
        (
            "SIM201",
            "def f(b, k):\n    # `not (k2 == k)`, not `!=`: see #268\n"
            "    return [v for k2, v in b if not (k2 == k)]\n",
        ),
        ("SIM103", "def g(a, b):\n    if a and b:\n        return True\n    return False\n"),  # bool(a and b)
        # pyparsing 3.1.2: [*(trace if trace is not None else [])[:], self]
        ("RUF005", "def f(trace, item):\n    return (trace if trace is not None else [])[:] + [item]\n"),
        # sqlparse 0.5.1: _TokenType((*self, name))
        ("RUF005", "def f(self, name):\n    return tuple(self + (name,))\n"),
        # sqlparse 0.5.1: _ptidx would leave the continuation misaligned (E128)
        ("RUF059", ALIGNED),
        # marshmallow 3.21.3: sum over a class's few bases' field lists
        ("RUF017", "def f(klass):\n    return sum((list(b.__dict__) for b in klass.__mro__), [])\n"),
        # pyparsing 3.1.2: list(...)[0] in import-time code; an empty one raised IndexError
        ("RUF015", "def f(fn):\n    return list(fn.parameters)[0]\n"),
        # pycodestyle 2.12.0: commonpath raises on mixed absolute and relative paths
        ("RUF071", "import os\n\n\ndef f(args):\n    return os.path.commonprefix(args)\n"),
        # pyparsing 3.1.2: dummy already says it is unused; _dummy only quiets the linter
        ("RUF059", "def f(pair):\n    key, dummy = pair\n    return key\n"),
        ("B007", "def f(pairs):\n    for key, dummy in pairs:\n        print(key)\n"),
        # humanize 4.9.0: "" if not (unit or ordinal_) or unit in (...) else " "
        (
            "SIM108",
            "def f(unit, o):\n    if not (unit or o) or unit in ('a', 'b'):\n        s = ''\n"
            "    else:\n        s = ' '\n    return s\n",
        ),
        # pyparsing 3.1.2: a nested test of five lines joined to the outer one
        (
            "SIM102",
            "def f(a, es):\n    if a:\n        if any(\n            e\n            for e in es\n        ):\n"
            "            return 1\n",
        ),
        # xlrd 2.0.1: the names an unpacking binds for a debug print commented out below it
        ("RUF059", "def f(data):\n    kind, ident = data[0]\n    # print(kind, ident)\n    return data\n"),
        ("RUF059", "def f(data):\n    kind, ident = data[0]\n    # print(kind, ident)\n\n\nx = 1\n"),
        ("F841", "def f(g):\n    result = g()\n    # result is ignored\n    return 1\n"),
        ("B007", "def f(rows):\n    for row in rows:\n        print(rows)  # not row: the whole list\n"),
        # xlrd 2.0.1: `oERR in (bop.kind, aop.kind)` turns the test around
        ("PLR1714", "def f(a, b, k):\n    return a.kind == k or b.kind == k\n"),
        ("PLR1714", "def f(self, c):\n    assert self.c == (0, 0) or self.c == c\n"),  # a tuple of tuples
        # waitress 3.0.2: `in` tests identity first, and the two cases of a security check hide
        ("PLR1714", "def f(proxy, peer):\n    return proxy == '*' or proxy == peer\n"),
        # xlrd 2.0.1: the membership test would be the odd one out of its function
        (
            "PLR1714",
            "def f(a, b, k, x):\n    if a.kind == k or b.kind == k:\n        return 1\n"
            "    return x == 1 or x == 2\n",
        ),
        # ply 3.11: `and v.__doc__:` tacked onto the second line of a two-line outer test
        (
            "SIM102",
            "def f(v, t):\n    if (isinstance(v, t) or\n            v.n == 2):\n        if v.doc:\n"
            "            return 1\n",
        ),
    ],
)
def test_fixes_a_strict_reviewer_rejected_are_not_offered(tmp_path: Path, rule: str, text: str) -> None:
    diagnostics = ruff_json(tmp_path, "m.py", text, rule)

    found, left = with_candidates(text, diagnostics, "m.py")

    assert diagnostics and found == [] and {item["code"] for item in left} == {rule}


@pytest.mark.parametrize(
    ("rule", "text"),
    [
        ("PLR1714", "def f(cp):\n    return cp == 1523 or cp == 1524\n"),  # plain decimal stays
        ("PLR5501", ELSE_IF),  # no comment between else: and if
        (
            "SIM102",
            "def f(x, b):\n    if x:\n        if isinstance(b, str) and b.startswith('a'):\n"
            "            return 1\n",
        ),
        (
            "SIM108",
            "def f(args):\n    if len(args) == 0:\n        x = None\n    else:\n        x = args[0]\n"
            "    return x\n",
        ),
        ("UP031", "def f(name):\n    return 'missing: %s' % (name,)\n"),
        ("B006", "def f(items=[]):\n    return len(items)\n"),  # read only: the same either way
        ("RUF022", '__all__ = ["b", "a"]\n'),
        ("SIM103", "def f(x, s):\n    if x is s:\n        return True\n    else:\n        return False\n"),
        ("SIM201", "def f(b, k):\n    return [v for k2, v in b if not (k2 == k)]\n"),
        (
            "UP030",
            'def f(self):\n    return "{0}({1})".format(\n        self.name, ", ".join(self.items)\n    )\n',
        ),  # a hanging indent: no bracket moves under it
        ("E712", "def f(flag):\n    if (flag > 0) == True:\n        return None\n"),  # a block, not aligned
        ("D400", 'def f(t):\n    """Return a"""\n    return \'a\'\n'),
        ("RUF005", "def f(trace, item):\n    return trace + [item]\n"),
        (
            "RUF059",
            ALIGNED.replace("(m=',',\n                                        idx", "(\n        m=',', idx"),
        ),
    ],
)
def test_the_same_fixes_are_offered_where_nothing_is_lost(tmp_path: Path, rule: str, text: str) -> None:
    diagnostics = ruff_json(tmp_path, "m.py", text, rule)

    found, left = with_candidates(text, diagnostics, "m.py")

    assert [item["code"] for item in found] == [rule] and left == []


def test_code_its_docstring_says_is_copied_is_left_as_it_is(tmp_path: Path) -> None:
    """tabulate's ``_CustomTextWrap`` was "copy pasted out of the CPython baseline"."""
    copied = 'class Wrap:\n    """Mostly copy pasted out of CPython."""\n\n'
    copied += "    def f(self, x):\n        return x == None\n"
    own = "def g(x):\n    return x == None\n"
    diagnostics = ruff_json(tmp_path, "m.py", copied + own, "E711")

    found, left = with_candidates(copied + own, diagnostics, "m.py")

    assert [item["location"]["row"] for item in found] == [7] and [
        item["location"]["row"] for item in left
    ] == [5]


def test_a_text_that_does_not_parse_gets_no_candidate() -> None:
    broken = "def f(:\n    try:\n        pass\n    except:\n        pass\n"
    bare = [{"code": "E722", "message": "Do not use bare `except`", "location": {"row": 4, "column": 5}}]

    assert with_candidates(broken, bare, "m.py") == ([], bare)


TERNARY = 'def f(m):\n    if not m:\n        x = ""\n    else:\n        x = m.group(1)\n    return x\n'
NESTED = "def f(c, d):\n    if not c:\n        x = 1\n    else:\n        x = 2 if d else 3\n    return x\n"
COPY = "def f(index_v, rows):\n    return [index_v] + list(rows)\n"


@pytest.mark.parametrize(
    ("rule", "text", "expected"),
    [
        ("SIM108", TERNARY, 'def f(m):\n    x = m.group(1) if m else ""\n    return x\n'),
        (
            "SIM108",
            NESTED,
            "def f(c, d):\n    x = 1 if not c else 2 if d else 3\n    return x\n",
        ),  # regrouped
        ("RUF005", COPY, "def f(index_v, rows):\n    return [index_v, *rows]\n"),
        (
            "RUF005",
            "def f(file_info):\n    return tuple(file_info) + (None,)\n",
            "def f(file_info):\n    return (*file_info, None)\n",
        ),  # webtest 3.0.7's app.py: not (*tuple(file_info), None), a reviewer's EDIT
        (
            "SIM108",
            TERNARY.replace('x = ""', "x = size").replace("m.group(1)", "size - m.size"),
            "def f(m):\n    x = (size - m.size) if m else size\n    return x\n",
        ),  # cachetools: the subtraction grouped
        (
            "SIM108",
            NESTED.replace("2 if d else 3", "2 + d if d else 3"),
            "def f(c, d):\n    x = 1 if not c else 2 + d if d else 3\n    return x\n",
        ),  # the conditional it carries over is left as written
        (
            "RUF005",
            "list = tuple\n\n\n" + COPY,
            "list = tuple\n\n\n" + COPY.replace("] + list(rows)", ", *list(rows)]"),
        ),
        (
            "SIM108",
            TERNARY.replace('x = ""', "x = Group").replace("m.group(1)", "lambda e: e"),
            "def f(m):\n    x = (lambda e: e) if m else Group\n    return x\n",
        ),  # pyparsing's wrapper: the lambda parenthesized
        (
            "RUF005",
            "def f(op):\n    a, b = (op + (None,))[:2]\n    return a, b\n",
            "def f(op):\n    a, b = (*op, None)[:2]\n    return a, b\n",
        ),  # not ((*op, None))[:2]
        (
            "RUF005",
            "def f(cls, args, kwargs):\n    return lambda d: cls(*(args + (d,)), **kwargs)\n",
            "def f(cls, args, kwargs):\n    return lambda d: cls(*args, d, **kwargs)\n",
        ),  # munch 4.0.0's fromJSON: not cls(*(*args, d), **kwargs)
        (
            "RUF005",
            "def f(self, other):\n    return Chain(*self.steps + (other,))\n",
            "def f(self, other):\n    return Chain(*self.steps, other)\n",
        ),  # lark 1.1.9's TransformerChain: no parentheses of its own around the concatenation
        (
            "RUF005",
            "def f(head, rest):\n    return [*(head + (rest,))]\n",
            "def f(head, rest):\n    return [*head, rest]\n",
        ),
        (
            "RUF005",
            "def f(handlers, h):\n    return build_opener(*tuple(handlers + [h]))\n",
            "def f(handlers, h):\n    return build_opener(*handlers, h)\n",
        ),  # feedparser 6.0.14's http.py: not build_opener(*tuple([*handlers, h]))
        (
            "RUF005",
            "def f(handlers, h):\n    return [*list(handlers + [h]), 1]\n",
            "def f(handlers, h):\n    return [*handlers, h, 1]\n",
        ),
        (
            "UP031",
            "def g(v, w):\n    return ('%s on %s' %\n            (v, w))\n",
            "def g(v, w):\n    return '{} on {}'.format(v, w)\n",
        ),  # pyflakes' _get_version: not return ('...'.format(...))
        (
            "UP031",
            "def g(found):\n    return(', found %r' % found).replace('a', 'b')\n",
            "def g(found):\n    return ', found {!r}'.format(found).replace('a', 'b')\n",
        ),
        (
            "F841",
            "def f(m, text):\n    full = m\n    pretext = full[:-len(text)]\n    return full\n",
            "def f(m, text):\n    full = m\n    return full\n",
        ),  # mistune 3.0.2: not a bare full[:-len(text)] left behind
        (
            "SIM108",
            "def f(s, a):\n    x: int\n\n    if s is a:\n        x = 0\n    else:\n"
            "        x = id(s)\n    return x\n",
            "def f(s, a):\n    x: int = 0 if s is a else id(s)\n    return x\n",
        ),  # blinker's sender_id: c.Hashable, not left dangling above
        (
            "UP031",
            "def g(found):\n    return print(', found %r' % found)\n",
            "def g(found):\n    return print(', found {!r}'.format(found))\n",
        ),  # a call's parentheses stay
        (
            "PLR1714",
            "def f(row, t):\n    return (t == list or t == str) and (len(row) > 1)\n",
            "def f(row, t):\n    return t in (list, str) and (len(row) > 1)\n",
        ),  # tabulate 0.9.0's _is_separating_line
        (
            "B007",
            "def f(ps):\n    for idx, p in enumerate(ps):\n        g(p)\n",
            "def f(ps):\n    for p in ps:\n        g(p)\n",
        ),  # pexpect 4.9.0's compile_pattern_list: the pointless enumerate goes too
        (
            "B007",
            "def f(ps):\n    for idx, p in enumerate(ps, 1):\n        g(p)\n",
            "def f(ps):\n    for _idx, p in enumerate(ps, 1):\n        g(p)\n",
        ),  # a start given: renamed, as ruff writes it
        (
            "B007",
            "def freeze(self):\n    for key, val in self.items():\n        val.freeze()\n",
            "def freeze(self):\n    for val in self.values():\n        val.freeze()\n",
        ),  # addict 2.4.0's Dict.freeze: the values, as a reviewer asked, not _key
        (
            "SIM109",
            "def f(row, t):\n    return (t == list or t == str) and (len(row) > 1)\n",
            "def f(row, t):\n    return t in (list, str) and (len(row) > 1)\n",
        ),  # the same rewrite, which ruff offers under both rules
        (
            "PLR1714",
            "def f(t):\n    return not (t == 3 or t == 4)\n",
            "def f(t):\n    return not (t in (3, 4))\n",
        ),  # no and around it: the grouping stays, as ruff writes it
        (
            "UP031",
            "def f(t):\n    return '%s' % t.target\n",
            "def f(t):\n    return str(t.target)\n",
        ),  # jsonpath-ng 1.6.1: a format with nothing around its field, not f'{t.target}'
        (
            "SIM101",
            "def f(d):\n    if not (isinstance(d, list) or isinstance(d, dict)):\n        return d\n",
            "def f(d):\n    if not isinstance(d, (list, dict)):\n        return d\n",
        ),  # jsonpath-ng 1.6.1: the parentheses that grouped the or go with it
        (
            "SIM101",
            "def f(d):\n    return g(isinstance(d, list) or isinstance(d, dict))\n",
            "def f(d):\n    return g(isinstance(d, (list, dict)))\n",
        ),  # a call's own parentheses stay
    ],
)
def test_fixes_are_written_as_the_reviewer_asked(tmp_path: Path, rule: str, text: str, expected: str) -> None:
    """``a if not c else b`` turned around, and ``*list(rows)`` without the copy (not where the
    file binds ``list`` itself, nor where turning the ternary would regroup it); a lambda branch
    parenthesized; parentheses that only grouped what became an atom taken out."""
    found, left = with_candidates(text, ruff_json(tmp_path, "m.py", text, rule), "m.py")

    [candidate] = [apply_changes(text, [change])[0] for change in fixes(text, found)]

    assert candidate == expected and left == []
    compile(candidate, "m.py", "exec")
    assert ruff_json(tmp_path, "m.py", candidate, rule) == []


DEAD = "def f(x):\n    TRY, MATCH = 0, -1\n    return x\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (DEAD, "def f(x):\n    return x\n"),  # pyparsing's TRY, MATCH, FAIL: deleted
        (
            DEAD.replace("return x", "return MATCH"),
            DEAD.replace("TRY", "_TRY").replace("return x", "return MATCH"),
        ),
        (
            DEAD.replace("-1", "-1  # states"),
            DEAD.replace("TRY, MATCH", "_TRY, _MATCH").replace("-1", "-1  # states"),
        ),
        (DEAD.replace("-1", "x"), DEAD.replace("TRY, MATCH", "_TRY, _MATCH").replace("-1", "x")),
    ],
)
def test_unused_constants_are_deleted_not_renamed(tmp_path: Path, text: str, expected: str) -> None:
    """Constants unpacked into names nothing reads go, each name's finding with the same
    deletion; where one is read, a value is not a constant or a comment would go with them,
    each unused name is renamed as ruff does."""
    found, left = with_candidates(text, ruff_json(tmp_path, "m.py", text, "F841"), "m.py")

    changes = fixes(text, found)
    candidate, applied, overlapping = apply_changes(text, changes)

    assert candidate == expected and left == [] and overlapping == [] and changes == applied
    compile(candidate, "m.py", "exec")
    assert ruff_json(tmp_path, "m.py", candidate, "F841") == []


THROWN = "def f(n):\n    for _ in range(n):\n        pass\n    for i in range(n):\n        print(n)\n"
COUNTED = THROWN.replace("for _ in range(n):\n        pass", "for j in range(n):\n        print(j)")
UNPACKED = (
    "def f(group, token):\n    _, first = token\n    pidx, prev_ = group.prev(first)\n    return prev_\n"
)
READ = UNPACKED + "print(_('x'))\n"  # gettext's _


@pytest.mark.parametrize(
    ("rule", "text", "expected"),
    [
        # prettytable 3.10.0: for _i in range(1, self.colspan), beside the file's for _ in widths
        ("B007", THROWN, THROWN.replace("for i in", "for _ in")),
        # sqlparse 0.5.0: _pidx, prev_ = ..., beside the file's _, token = ...
        ("RUF059", UNPACKED, UNPACKED.replace("pidx, prev_", "_, prev_")),
        ("B007", THROWN.replace("_ in", "__ in"), THROWN.replace("_ in", "__ in").replace("i in", "__ in")),
        # no throwaway name in the file, or one it reads: ruff's rename
        ("B007", COUNTED, COUNTED.replace("for i in", "for _i in")),
        ("RUF059", READ, READ.replace("pidx", "_pidx")),
    ],
)
def test_an_unused_name_takes_the_files_throwaway_name(
    tmp_path: Path, rule: str, text: str, expected: str
) -> None:
    found, left = with_candidates(text, ruff_json(tmp_path, "m.py", text, rule), "m.py")

    candidate, applied, _ = apply_changes(text, fixes(text, found))

    assert candidate == expected and left == [] and applied
    compile(candidate, "m.py", "exec")
    assert ruff_json(tmp_path, "m.py", candidate, rule) == []


@pytest.mark.parametrize(
    ("rule", "text"),
    [
        ("E721", "def g(row):\n    return type(row) == type(row.kind) == list\n"),  # chained
        (
            "E721",
            "def g(row):\n    return (type(row)  # the row's\n            == list)\n",
        ),  # a comment between
    ],
)
def test_where_a_candidate_could_change_meaning_none_is_made(tmp_path: Path, rule: str, text: str) -> None:
    diagnostics = ruff_json(tmp_path, "m.py", text, rule)
    assert diagnostics

    found, left = with_candidates(text, diagnostics, "m.py")

    assert found == [] and len(left) == len(diagnostics)


STARRED = "from .util import *\nfrom .exceptions import *\nfrom .core import __diag__\nimport sys\n"
"""pyparsing 3.1.2's ``__init__.py`` in small: a later star import shadows an earlier one's
names, and sorted, the package fails with a circular import."""


def test_imports_whose_order_matters_are_not_sorted(tmp_path: Path) -> None:
    (tmp_path / "ruff.toml").write_text('[lint]\nselect = ["I001"]\n')
    settings = lint_settings(tmp_path)
    options = settings.file_options(tmp_path, "pkg/__init__.py", STARRED)

    by_ruff = ruff_safe_fixes(tmp_path, "pkg/__init__.py", STARRED, *options)
    diagnostics = ruff_diagnostics(tmp_path, "pkg/__init__.py", by_ruff, *options)
    found, left = with_candidates(by_ruff, diagnostics, "pkg/__init__.py")

    assert by_ruff == STARRED and found == [] and [item["code"] for item in left] == ["I001"]
    plain = STARRED.replace(" *", " names")
    plain_options = settings.file_options(tmp_path, "pkg/__init__.py", plain)
    assert ruff_safe_fixes(tmp_path, "pkg/__init__.py", plain, *plain_options) != plain  # sorted as before
    shown = '"""Use it as::\n\n    from pkg import *\n"""\n' + plain  # pexpect 4.9.0's run() docstring
    shown_options = settings.file_options(tmp_path, "pkg/__init__.py", shown)
    assert ruff_safe_fixes(tmp_path, "pkg/__init__.py", shown, *shown_options) != shown  # an example: sorted


def test_a_star_imports_file_takes_isorts_blank_lines_where_no_import_moves(tmp_path: Path) -> None:
    """glob2 0.7's ``__init__.py``: isort only wants a blank line after the ``__future__``
    import, which moves nothing; a blind reviewer sent back the file without it."""
    (tmp_path / "ruff.toml").write_text('[lint]\nselect = ["I001"]\n')
    text = "from __future__ import absolute_import\nfrom .impl import *\n\n\n__version__ = (0, 7)\n"
    options = lint_settings(tmp_path).file_options(tmp_path, "pkg/__init__.py", text)

    by_ruff = ruff_safe_fixes(tmp_path, "pkg/__init__.py", text, *options)

    assert by_ruff == text.replace("absolute_import\n", "absolute_import\n\n").replace("\n\n\n__v", "\n\n__v")
    assert ruff_diagnostics(tmp_path, "pkg/__init__.py", by_ruff, *options) == []


def test_a_noqa_for_a_rule_ruff_does_not_check_stays(tmp_path: Path) -> None:
    """oauthlib 4.0.1's ``assert isinstance(claims, dict)  # noqa: S101`` is for its bandit
    checks: under a selection without ``S``, RUF100's fix deleted the directive (a reviewer's
    EDIT, three times). In such a file the unused directives stay, with no fix; elsewhere ruff
    removes them as before."""
    (tmp_path / "ruff.toml").write_text('[lint]\nselect = ["RUF100", "E501"]\n')
    other = "import os\n\n\ndef f(x):\n    assert x  # noqa: S101\n    return os.sep  # noqa: E501\n"
    own = other.replace("  # noqa: S101", "")
    settings = lint_settings(tmp_path)

    options = settings.file_options(tmp_path, "m.py", other)
    by_ruff = ruff_safe_fixes(tmp_path, "m.py", other, *options)

    assert by_ruff == other
    assert [item["code"] for item in ruff_diagnostics(tmp_path, "m.py", by_ruff, *options)] == ["RUF100"] * 2
    own_options = settings.file_options(tmp_path, "m.py", own)
    assert ruff_safe_fixes(tmp_path, "m.py", own, *own_options) == own.replace("  # noqa: E501", "")


def test_branches_joined_into_and_and_or_stay_apart(tmp_path: Path) -> None:
    """deepdiff 9.1.0's ``_skip_this``: SIM114 joined ``elif`` guards, some of them ``and``
    tests, into one line of ``a and b or c and d`` (a reviewer's REJECT). Where a test joined is
    an ``and`` the file's SIM114 is left unfixed; elsewhere ruff joins the branches as before."""
    (tmp_path / "ruff.toml").write_text('[lint]\nselect = ["SIM114"]\n')
    guards = (
        "def f(a, b, c):\n    if a and b:\n        skip = True\n    elif c:\n        skip = True\n"
        "    else:\n        skip = False\n    return skip\n"
    )
    plain = guards.replace("if a and b:", "if a:")
    settings = lint_settings(tmp_path)

    options = settings.file_options(tmp_path, "m.py", guards)

    assert ruff_safe_fixes(tmp_path, "m.py", guards, *options) == guards
    assert [item["code"] for item in ruff_diagnostics(tmp_path, "m.py", guards, *options)] == ["SIM114"]
    joined = ruff_safe_fixes(tmp_path, "m.py", plain, *settings.file_options(tmp_path, "m.py", plain))
    assert "if a or c:" in joined


def test_no_cause_is_given_to_the_caught_exception_raised_again() -> None:
    """pyparsing 3.1.2 re-raises the caught exception with its traceback cleared; ``from exc``
    would make it its own cause."""
    text = "def f(g):\n    try:\n        g()\n    except ValueError as exc:\n"
    text += "        raise exc.with_traceback(None)\n"
    diagnostics = [
        {
            "code": "B904",
            "message": "raise from",
            "location": {"row": 5, "column": 9},
            "end_location": {"row": 5, "column": 39},
        }
    ]

    found, left = with_candidates(text, diagnostics, "m.py")

    assert found == [] and [item["code"] for item in left] == ["B904"]


def test_a_raise_in_a_bare_except_gets_no_cause_it_cannot_name(tmp_path: Path) -> None:
    """munch 4.0.0's ``__setattr__`` turns whatever a subclass's ``__setitem__`` raised into an
    ``AttributeError``: ``from None`` hid a frozen munch's ``TypeError``, and a reviewer sent it
    back. A bare ``except:`` binds no name to raise from, so the finding stays."""
    text = "def f(self, k, v):\n    try:\n        self[k] = v\n    except:\n        raise AttributeError(k)\n"

    found, left = with_candidates(text, ruff_json(tmp_path, "m.py", text, "B904"), "m.py")

    assert found == [] and [item["code"] for item in left] == ["B904"]


@pytest.mark.parametrize("lowest", [(2, 6), (2, 7), None])
def test_a_membership_test_takes_a_tuple_not_a_set(tmp_path: Path, lowest: tuple[int, int] | None) -> None:
    """A set hashes the value: ply 3.11's lexer, given a state type that is a list, raised
    ``TypeError: unhashable type`` where ``==`` had compared it and the lexer logged its own
    error (a reviewer sent the set back); toml 0.10.2 declares Python 2.6, which has no set
    displays."""
    text = "def f(item):\n    return item == '_' or item == '-'\n"
    found, _ = with_candidates(text, ruff_json(tmp_path, "m.py", text, "PLR1714"), "m.py", lowest=lowest)

    [candidate] = [apply_changes(text, [change])[0] for change in fixes(text, found)]

    assert candidate == "def f(item):\n    return item in ('_', '-')\n"
    assert not older_syntax(candidate, (2, 6))
    assert ruff_json(tmp_path, "m.py", candidate, "PLR1714") == []
    namespace: dict[str, Any] = {}
    exec(compile(candidate, "m.py", "exec"), namespace)
    assert namespace["f"](["x"]) is False  # unhashable: compared, as the comparisons did


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "def f(t):\n    return '_token_nud_%s' % t['type']\n",
            "def f(t):\n    return f\"_token_nud_{t['type']}\"\n",
        ),  # jmespath 1.0.1's parser: the other quote
        (
            "def f(t):\n    return \"Unexpected token: %s, %r\" % (t['value'], t)\n",
            "def f(t):\n    return f\"Unexpected token: {t['value']}, {t!r}\"\n",
        ),
        (
            "def f(t):\n    return 'say \"%s\"' % t['k']\n",
            "def f(t):\n    return 'say \"{}\"'.format(t['k'])\n",
        ),  # both quotes taken: ruff's .format() stays (and the verdict drops it)
        (
            "def f(names):\n    return r'&(%s);' % '|'.join(names)\n",
            "def f(names):\n    return r'&({});'.format('|'.join(names))\n",
        ),  # python-slugify 8.0.4: a call's string inside an f-string, which a reviewer rejected
    ],
)
def test_a_format_call_with_a_string_in_its_arguments_becomes_an_f_string(
    tmp_path: Path, text: str, expected: str
) -> None:
    """Ruff's UP032 turns no ``.format()`` call into an f-string where an argument holds a
    string literal, so ruff's UP031 fix stopped at ``.format()``, which the verdict drops."""
    found, _ = with_candidates(text, ruff_json(tmp_path, "m.py", text, "UP031"), "m.py", lowest=(3, 6))

    [candidate] = [apply_changes(text, [change])[0] for change in fixes(text, found)]

    assert candidate == expected
    compile(candidate, "m.py", "exec")
    assert ruff_json(tmp_path, "m.py", candidate, "UP031,UP032") == []
    older, _ = with_candidates(text, ruff_json(tmp_path, "m.py", text, "UP031"), "m.py", lowest=(3, 5))
    assert ".format(" in apply_changes(text, fixes(text, older))[0]  # no f-string before 3.6


_SCOPE = 'ALPHA = "[a-z]"\nDIGIT = "[0-9]"\n'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            _SCOPE + 'scheme = r"%(ALPHA)s (?: %(ALPHA)s | %(DIGIT)s | \\+ )* %%" % locals()\n',
            _SCOPE + 'scheme = rf"{ALPHA} (?: {ALPHA} | {DIGIT} | \\+ )* %"\n',
        ),  # oauthlib 4.0.1's uri_validate
        (
            _SCOPE + 'both = ("<%(ALPHA)r>"\n        " or "\n        "%(DIGIT)s") % vars()\n',
            _SCOPE + 'both = (f"<{ALPHA!r}>"\n        " or "\n        f"{DIGIT}")\n',
        ),  # each piece with a field an f-string, the others plain
        (
            'def f(a, b):\n    return "%(a)s-%(b)s" % locals()\n',
            'def f(a, b):\n    return f"{a}-{b}"\n',
        ),
    ],
)
def test_a_format_of_the_names_in_scope_becomes_an_f_string(tmp_path: Path, text: str, expected: str) -> None:
    """Ruff writes ``'%(name)s' % locals()`` as ``'{name}'.format(**locals())``, which its UP032
    leaves and the verdict drops: the f-string reads the same names, formatted the same way."""
    found, _ = with_candidates(text, ruff_json(tmp_path, "m.py", text, "UP031"), "m.py", lowest=(3, 6))

    candidate = apply_changes(text, fixes(text, found))[0]

    assert candidate == expected
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    exec(compile(text, "m.py", "exec"), before)
    exec(compile(candidate, "m.py", "exec"), after)
    values = [name for name, value in before.items() if isinstance(value, str) and not name.startswith("__")]
    assert all(before[name] == after[name] for name in values)
    if "def f" in text:
        assert before["f"](1, "x") == after["f"](1, "x") == "1-x"
    older, _ = with_candidates(text, ruff_json(tmp_path, "m.py", text, "UP031"), "m.py", lowest=(3, 5))
    assert ".format(**" in apply_changes(text, fixes(text, older))[0]  # no f-string before 3.6


@pytest.mark.parametrize(
    "text",
    [
        "from helpers import locals\n\nscheme = '%(ALPHA)s' % locals()\n",  # not the builtin
        "def f(row):\n    return '%(row)s' % self.__dict__\n",  # not the names in scope
    ],
)
def test_a_format_of_other_names_stays_as_ruff_writes_it(tmp_path: Path, text: str) -> None:
    """Ruff's ``.format(**...)`` stays (and the verdict drops it) where the names are not the
    scope's: an f-string would read others."""
    found, _ = with_candidates(text, ruff_json(tmp_path, "m.py", text, "UP031"), "m.py", lowest=(3, 6))

    assert ".format(**" in apply_changes(text, fixes(text, found))[0]


class Color(IntEnum):
    RED = 1


@pytest.mark.parametrize(
    ("text", "expected", "argument"),
    [
        (
            "def f(x):\n    return '<Headers(%s)>' % repr(list(x))\n",
            "def f(x):\n    return f'<Headers({list(x)!r})>'\n",
            ("é", 1),
        ),  # h11 0.14.0's Headers.__repr__
        (
            "def f(x):\n    return '%s: %s, %s' % (x, ascii(x), repr(x))\n",
            "def f(x):\n    return f'{x}: {x!a}, {x!r}'\n",
            "é",
        ),
        (
            "def f(x):\n    return 'key %s' % repr(x['k'])\n",
            "def f(x):\n    return f\"key {x['k']!r}\"\n",
            {"k": "v"},
        ),  # then in the other quote, as above
        (
            "def f(x):\n    return '__T_%s' % str(x)\n",
            "def f(x):\n    return f'__T_{x!s}'\n",
            Color.RED,
        ),  # lark 1.1.9's '__T_%s' % str(t); !s, not {x}: an IntEnum formats as its number
        (
            "def f(x):\n    return '%s or %s' % (repr(x), repr)\n",
            "def f(x):\n    return f'{x!r} or {repr}'\n",
            "ab",
        ),  # the builtin itself as a value
        (
            "from reprlib import repr\n\n\ndef f(x):\n    return '<%s>' % repr(x)\n",
            "from reprlib import repr\n\n\ndef f(x):\n    return f'<{repr(x)}>'\n",
            "x" * 50,
        ),  # not the builtin
    ],
)
def test_a_repr_call_in_a_format_becomes_the_fields_conversion(
    tmp_path: Path, text: str, expected: str, argument: object
) -> None:
    """h11 0.14.0: ``"<Headers(%s)>" % repr(list(self))`` became ``f"<Headers({repr(list(self))})>"``
    under its own rules, the spelling ruff's RUF010 sends back, where ``{list(self)!r}`` says
    the same. The result is the same text for the same argument."""
    found, _ = with_candidates(text, ruff_json(tmp_path, "m.py", text, "UP031"), "m.py", lowest=(3, 7))

    [change] = fixes(text, found)
    written = apply_changes(text, [change])[0]
    final = ruff_safe_fixes(tmp_path, "m.py", written, "--select", "UP032", "--target-version", "py37")

    assert final == expected
    assert ruff_json(tmp_path, "m.py", final, "UP031,UP032,RUF010") == [] or "import repr" in text
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    exec(compile(text, "m.py", "exec"), before)
    exec(compile(final, "m.py", "exec"), after)
    assert after["f"](argument) == before["f"](argument)


def test_a_block_after_a_header_over_several_lines_or_a_continuation_is_left(tmp_path: Path) -> None:
    """Neither is flagged by ruff as released; the candidate refuses both where it is asked."""
    text = "if (a and\n        b): c()\nif d: \\\n    e()\n"
    module = Source(text)
    first, second = text.index("): c") + 1, text.index("d: ") + 1
    assert one_line_block(module, 2, first, first + 1) == []
    assert one_line_block(module, 3, second, second + 1) == []


def test_statements_after_a_header_or_around_a_continuation_are_left(tmp_path: Path) -> None:
    """``if x: a; b`` is a one-line block first (E701): parting ``b`` alone would move it out of
    the block; a semicolon beside a line continuation is left too."""
    text = "if x: a(); b()\nc(); \\\n    d()\n"
    found, left = with_candidates(text, ruff_json(tmp_path, "m.py", text, "E702"), "m.py")

    assert found == [] and [item["code"] for item in left] == ["E702", "E702"]


def test_a_comparison_to_true_becomes_a_truth_test_only_where_its_operand_is_a_bool(tmp_path: Path) -> None:
    """configobj 5.0.9's ``as_bool``: ``val == False`` made ``not val`` took an empty value for
    ``False`` where it had refused it (its doctests failed; a reviewer's REJECT); ``val is False``
    would refuse the ``0`` that ``is_boolean`` accepts. A comparison, ``not`` and ``isinstance``
    are bools: there the truth test is the same test."""
    text = (
        "def f(val, check, a):\n    if val == False:\n        return 0\n"
        "    if check != True:\n        return 1\n"
        "    if isinstance(a, int) == True:\n        return 2\n    return (a > 1) == False\n"
    )
    found, left = with_candidates(text, ruff_json(tmp_path, "m.py", text, "E712"), "m.py")

    assert sorted(int(item["location"]["row"]) for item in found) == [6, 8]
    assert sorted(int(item["location"]["row"]) for item in left) == [2, 4]


@pytest.mark.parametrize("rule", ["SIM222", "SIM223"])
def test_a_constant_switch_in_a_condition_is_left(tmp_path: Path, rule: str) -> None:
    """xlrd 2.0.1's ``if 0 and debug:``: the ``0`` is a switch its developer flips to trace;
    ruff's ``if False:`` deletes it (a reviewer's REJECT)."""
    text = "def f(debug):\n    if 0 and debug:\n        print(1)\n    return 1 or debug\n"
    diagnostics = ruff_json(tmp_path, "m.py", text, rule)
    assert diagnostics and all(item.get("fix") for item in diagnostics)

    found, left = with_candidates(text, diagnostics, "m.py")

    assert rule in DECLINED and found == [] and {item["code"] for item in left} == {rule}


def test_a_fix_importing_a_module_the_lowest_python_lacks_is_not_offered(tmp_path: Path) -> None:
    """Ruff's B004 fix where ``callable`` is shadowed imports ``builtins``: Python 2 has none
    (bottle 0.12.25 supports 2.5 and no longer imported on 2.7, though it compiled)."""
    text = 'def f(x, callable=None):\n    return hasattr(x, "__call__")\n'
    diagnostics = ruff_json(tmp_path, "m.py", text, "B004")
    assert "import builtins" in str(diagnostics[0]["fix"])

    found, left = with_candidates(text, diagnostics, "m.py", lowest=(2, 7))
    assert found == [] and [item["code"] for item in left] == ["B004"]
    found, left = with_candidates(text, diagnostics, "m.py", lowest=(3, 7))
    assert [item["code"] for item in found] == ["B004"] and left == []


def test_the_mutable_defaults_of_one_function_are_made_none_by_one_fix(tmp_path: Path) -> None:
    """humanfriendly 10.0's ``man_role(..., options={}, content=[])``: ruff's two B006 fixes
    each insert their ``if ... is None:`` at the top of the body, so the second overlapped the
    first and was dropped, and ``options=None`` stood beside ``content=[]`` (a reviewer's EDIT).
    They are one fix now, shared by both findings; another function's stays its own."""
    text = (
        'def role(name, options={}, content=[]):\n    """Doc."""\n    return len(options) + len(content)\n'
        "\n\n"
        "def other(items=[]):\n    return len(items)\n"
    )
    found, _ = with_candidates(text, ruff_json(tmp_path, "m.py", text, "B006"), "m.py")

    changes = fixes(text, found)

    assert [change.label for change in changes] == ["B006 line 1", "B006 line 6"]
    fixed = apply_changes(text, changes)[0]
    assert fixed.splitlines()[:7] == [
        "def role(name, options=None, content=None):",
        '    """Doc."""',
        "    if options is None:",
        "        options = {}",
        "    if content is None:",
        "        content = []",
        "    return len(options) + len(content)",
    ]
    assert ruff_json(tmp_path, "m.py", fixed, "B006") == []


def test_a_mutable_default_the_body_never_reads_becomes_none_with_no_guard(tmp_path: Path) -> None:
    """humanfriendly 10.0's Sphinx roles never read ``content=[]``: its guard was dead code, which
    a reviewer asked to drop; ``options``, which the body reads, keeps its guard."""
    text = 'def role(name, options={}, content=[]):\n    """Doc."""\n    return name, len(options)\n'
    found, _ = with_candidates(text, ruff_json(tmp_path, "m.py", text, "B006"), "m.py")

    fixed = apply_changes(text, fixes(text, found))[0]

    assert fixed.splitlines() == [
        "def role(name, options=None, content=None):",
        '    """Doc."""',
        "    if options is None:",
        "        options = {}",
        "    return name, len(options)",
    ]


def test_an_unpackings_unused_names_are_renamed_all_or_none(tmp_path: Path) -> None:
    """croniter 2.0.5: ``traceback`` cannot become ``_traceback`` (the module's import of that
    name), and a reviewer sent back its two neighbours renamed as half done."""
    text = (
        "import sys\nimport traceback as _traceback\n\n\ndef f(g):\n    try:\n        return g()\n"
        "    except ValueError:\n        kind, value, traceback = sys.exc_info()\n"
        "        return _traceback.format_exc()\n"
    )
    diagnostics = ruff_json(tmp_path, "m.py", text, "RUF059")
    assert sum(bool(item.get("fix")) for item in diagnostics) == 2

    found, left = with_candidates(text, diagnostics, "m.py")

    assert found == [] and len(left) == 3
    alone = text.replace("import traceback as _traceback\n", "import traceback as tb\n").replace(
        "_traceback.format_exc", "tb.format_exc"
    )
    assert len(with_candidates(alone, ruff_json(tmp_path, "m.py", alone, "RUF059"), "m.py")[0]) == 3


def test_a_removed_version_block_leaves_one_run_of_blank_lines(tmp_path: Path) -> None:
    """pyasn1 0.6.0: UP036 removed ``if sys.version_info[0] <= 2: def __long__`` and left two
    blank lines between ``__int__`` and ``__float__`` (a reviewer's EDIT)."""
    method = "    def __int__(self):\n        return 1\n\n"
    block = "    if sys.version_info[0] <= 2:\n        def __long__(self):\n            return 1\n\n"
    text = "import sys\n\n\nclass A:\n" + method + block + "    def __float__(self):\n        return 1.0\n"
    diagnostics = ruff_json(tmp_path, "m.py", text, "UP036", "--target-version", "py38")

    found, _ = with_candidates(text, diagnostics, "m.py", lowest=(3, 8))

    changed = apply_changes(text, fixes(text, found))[0]
    assert changed == "import sys\n\n\nclass A:\n" + method + "    def __float__(self):\n        return 1.0\n"


@pytest.mark.parametrize(
    ("rule", "path", "text"),
    [
        # bitstring 5.0.0 checks the lengths equal just above its ``zip``: ruff's
        # ``strict=False`` restates the default (a reviewer's EDIT, as noise), and
        # ``strict=True`` would change what runs
        ("B905", "m.py", "def f(a, b):\n    assert len(a) == len(b)\n    return list(zip(a, b))\n"),
        # bidict 0.24.1's ``_typing.py``: ``override as override`` marks the re-export three
        # modules import; without the alias ruff's F401 removed it (a reviewer's REJECT)
        (
            "PLC0414",
            "pkg/_typing.py",
            "import sys\n\nif sys.version_info >= (3, 12):\n    from typing import override as override\n",
        ),
    ],
)
def test_a_declined_rule_is_left_with_no_fix(tmp_path: Path, rule: str, path: str, text: str) -> None:
    diagnostics = ruff_json(tmp_path, path, text, rule)
    assert diagnostics and all(item.get("fix") for item in diagnostics)

    found, left = with_candidates(text, diagnostics, path)

    assert rule in DECLINED and found == [] and [item["code"] for item in left] == [rule]


def test_a_warnings_message_is_formatted_as_any_other(tmp_path: Path) -> None:
    """``warnings.warn`` formats nothing lazily, unlike a logger: jsonpickle 4.1.4's ``%`` format
    there stayed beside the ``raise`` below it made an f-string (a reviewer's EDIT)."""
    text = (
        "import warnings\n\n\ndef f(name, log):\n    warnings.warn('could not find %s!' % name)\n"
        "    log.warn('could not find %s!' % name)\n"
    )

    found, left = with_candidates(text, ruff_json(tmp_path, "m.py", text, "UP031"), "m.py", lowest=(3, 8))

    assert [row_of(item) for item in found] == [5] and [row_of(item) for item in left] == [6]


def test_a_get_is_not_made_to_call_itself(tmp_path: Path) -> None:
    """schematics 2.1.1's ``ChainMap.get``: SIM401 wrote ``return self.get(key, default)`` in
    ``get`` itself, which recursed for ever (a reviewer's REJECT); elsewhere it is offered."""
    text = (
        "class ChainMap:\n    def get(self, key, default=None):\n"
        "        return self[key] if key in self else default\n\n"
        "    def value(self, key):\n        return self[key] if key in self else None\n"
    )
    found, left = with_candidates(text, ruff_json(tmp_path, "m.py", text, "SIM401"), "m.py")

    assert [item["location"]["row"] for item in found] == [6]
    assert [item["location"]["row"] for item in left] == [3]


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        # webob 1.8.11: the elif's nested if mirrors the if's, which ruff leaves nested
        (
            "def f(scheme, port):\n    if scheme == 'https':\n        if port == '443':\n"
            "            port = None\n    elif scheme == 'http':\n        if port == '80':\n"
            "            port = None\n    return port\n",
            [],
        ),
        # schematics 2.1.1: a platform flag gates the test under it
        ("def f(c):\n    if PY2:\n        if c:\n            c.x = 1\n    return c\n", []),
        ("def f(c, d):\n    if d:\n        if c:\n            c.x = 1\n    return c\n", [2]),
    ],
)
def test_a_nested_if_in_an_elif_or_under_a_flag_stays(tmp_path: Path, text: str, kept: list[int]) -> None:
    found, _ = with_candidates(text, ruff_json(tmp_path, "m.py", text, "SIM102"), "m.py")

    assert [item["location"]["row"] for item in found] == kept


def test_the_last_of_a_row_of_guards_stays_a_guard(tmp_path: Path) -> None:
    """deepdiff 9.1.0: a row of ``if ...: return False`` guards then ``return True``; SIM103
    made the last one ``return not ...`` (a reviewer's REJECT). A lone guard is still folded."""
    row = "def f(a, b):\n    if a:\n        return False\n    if b:\n        return False\n    return True\n"
    lone = "def f(a, b):\n    g(a)\n    if b:\n        return False\n    return True\n"

    assert with_candidates(row, ruff_json(tmp_path, "m.py", row, "SIM103"), "m.py")[0] == []
    assert len(with_candidates(lone, ruff_json(tmp_path, "m.py", lone, "SIM103"), "m.py")[0]) == 1


@pytest.mark.parametrize(
    ("guard", "offered"),
    [
        ("not PATTERN.match(line)", False),  # return PATTERN.match(line): a match object or None
        ("not self.flag", False),
        ("not (line.startswith('#!') and line)", False),
        ("not (isinstance(line, str) and not line)", True),
        ("line.count('x') <= 2", True),
        ("not isinstance(line, str) and not line", False),  # return not (not ... and not ...)
    ],
)
def test_sim103_is_offered_only_where_it_returns_a_bool(tmp_path: Path, guard: str, offered: bool) -> None:
    """autopep8 2.3.2's ``is_python_file``: ``if not PATTERN.match(first_line): return False``
    then ``return True`` became ``return PATTERN.match(first_line)``, a match object where the
    docstring promises ``True``; and its ``if not isdir(f) and not is_python_file(f): return
    False`` became ``return not (not isdir(f) and not is_python_file(f))`` (a reviewer's EDITs)."""
    text = f"def f(self, line):\n    g(line)\n    if {guard}:\n        return False\n    return True\n"
    diagnostics = ruff_json(tmp_path, "m.py", text, "SIM103")
    assert [item["code"] for item in diagnostics] == ["SIM103"]

    found, _ = with_candidates(text, diagnostics, "m.py")

    assert len(found) == int(offered)


def test_an_if_else_a_comment_closes_stays(tmp_path: Path) -> None:
    """parsedatetime 2.6's ``icu.py``: the ``else:`` block ends in a comment at its indent; the
    conditional expression left it under nothing (a reviewer's EDIT). A comment at the ``if``'s
    own indent, after it, is the next statement's."""
    block = (
        "def f(c, s):\n    if c:\n        s = 1\n    else:\n        s = 2\n\n        # then\n    return s\n"
    )
    after = block.replace("        # then", "    # then")

    assert with_candidates(block, ruff_json(tmp_path, "m.py", block, "SIM108"), "m.py")[0] == []
    assert len(with_candidates(after, ruff_json(tmp_path, "m.py", after, "SIM108"), "m.py")[0]) == 1


def test_any_of_the_items_themselves_is_any_of_the_items(tmp_path: Path) -> None:
    """webob 1.8.11's ``__contains__``: SIM110 wrote ``any(d for d in self.dicts)``, which a
    reviewer sent back for ``any(self.dicts)``; a generator that tests more stays."""
    bare = (
        "def f(self):\n    for d in self.dicts:\n        if d:\n            return True\n    return False\n"
    )
    tested = bare.replace("if d:", "if d.x:")

    for text, expected in ((bare, "return any(self.dicts)"), (tested, "return any(d.x for d in self.dicts)")):
        found, _ = with_candidates(text, ruff_json(tmp_path, "m.py", text, "SIM110"), "m.py")
        assert expected in apply_changes(text, fixes(text, found))[0]


def test_an_all_of_an_inverted_comparison_is_not_offered(tmp_path: Path) -> None:
    """schematics 2.1.1's ``FrozenList.__eq__``: SIM110 wrote ``all(self[i] == other[i] ...)``
    for a loop returning False where ``!=``; ``__ne__`` is not ``not __eq__`` on Python 2.7, nor
    ``not a < b`` ``a >= b`` for a NaN (a reviewer's EDIT). ``is`` inverts exactly."""
    loop = "def f(a, b):\n    for i in a:\n        if i != b:\n            return False\n    return True\n"
    same = loop.replace("i != b", "i is not b")

    assert with_candidates(loop, ruff_json(tmp_path, "m.py", loop, "SIM110"), "m.py")[0] == []
    assert len(with_candidates(same, ruff_json(tmp_path, "m.py", same, "SIM110"), "m.py")[0]) == 1


@pytest.mark.parametrize(
    ("loop", "written"),
    [
        (  # autopep8 2.3.2's _shorten_line_at_tokens: arguments aligned under the bracket move with it
            "    for candidate in _shorten_line(tokens=tokens,\n"
            "                                   source=source):\n"
            "        yield candidate\n",
            "    yield from _shorten_line(tokens=tokens,\n                             source=source)\n",
        ),
        (  # a hanging indent is under no bracket: it stays
            "    for candidate in _shorten_line(\n            tokens=tokens, source=source):\n"
            "        yield candidate\n",
            "    yield from _shorten_line(\n            tokens=tokens, source=source)\n",
        ),
        (
            "    for candidate in _shorten_line(tokens):\n        yield candidate\n",
            "    yield from _shorten_line(tokens)\n",
        ),
    ],
)
def test_yield_from_moves_the_lines_aligned_under_its_iterable(
    tmp_path: Path, loop: str, written: str
) -> None:
    text = f"def f(tokens, source):\n{loop}"

    [found], _ = with_candidates(text, ruff_json(tmp_path, "m.py", text, "UP028"), "m.py")

    assert apply_changes(text, fixes(text, [found]))[0] == f"def f(tokens, source):\n{written}"


@pytest.mark.parametrize(
    ("block", "written"),
    [
        (
            "if not args:\n        files = [sys.stdin]\n    else:\n        files = args",
            "files = args or [sys.stdin]",
        ),
        ("if not args:\n        files = a + b\n    else:\n        files = args", "files = args or (a + b)"),
        (
            "if args:\n        files = args\n    else:\n        files = [sys.stdin]",
            "files = args or [sys.stdin]",
        ),
        (
            "if not args:\n        files = [sys.stdin]\n    else:\n        files = a",
            "files = a if args else [sys.stdin]",
        ),
        ("files = [sys.stdin] if not args else args", "files = args or [sys.stdin]"),  # SIM212
    ],
)
def test_a_conditional_of_a_name_on_itself_is_written_with_or(
    tmp_path: Path, block: str, written: str
) -> None:
    """tabulate 0.9.0's ``_main``: ``[sys.stdin] if not args else args``, turned round by SIM212
    (and SIM108's in the positive form), read ``args if args else [sys.stdin]``, which a reviewer
    asked to be ``args or [sys.stdin]`` (an EDIT); the value is the same."""
    text = f"def f(args, sys, a, b):\n    {block}\n    return files\n"

    [found], _ = with_candidates(text, ruff_json(tmp_path, "m.py", text, "SIM108,SIM212"), "m.py")

    assert apply_changes(text, fixes(text, [found]))[0].splitlines()[1] == f"    {written}"
