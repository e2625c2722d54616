"""Fixes that keep the code and appear only once others are made: offered on the proposal
again, pass by pass (real ruff)."""

from __future__ import annotations

from pathlib import Path

from structured_agents.tasks.lint_fixes import fixes
from structured_agents.tasks.lint_passes import more_of_the_same
from structured_agents.tasks.lint_rewrites import with_candidates
from structured_agents.tasks.lint_settings import lint_settings
from structured_agents.tasks.lint_verdict import Verdict, judge
from structured_agents.tasks.ruff import fixable_diagnostics, ruff_safe_fixes
from structured_agents.tasks.same_code import same_code

THREE_NESTED = """def unused(actlist, st_action, st_actionp, printed, log):
    for a, p, m in actlist:
        if a in st_action:
            if p is not st_actionp[a]:
                if (a, m) not in printed:
                    log.debug('  ! %-15s [ %s ]', a, m)
                    printed[(a, m)] = 1
"""
"""ply 3.11's ``yacc.py``: ruff joins the outer pair, and reports the inner one only then."""

JOINED_OVER_STATEMENTS = """def locate(self, s, qname):
    while s >= 0:
        if self.seen[s]:
            if not self.ignore:
                print('seen %s' % qname); dump(self.seen)
                raise ValueError(qname)
        s -= 1
"""
"""xlrd 2.0.1's ``compdoc.py``: the statements parted at the semicolon overlap the join that
re-indents their line."""


def _first_pass(root: Path, name: str) -> tuple[str, Verdict]:
    path = f"{name}.py"
    original = (root / path).read_text()
    settings = lint_settings(root)
    options = settings.file_options(root, path, original)
    by_ruff = ruff_safe_fixes(root, path, original, *options)
    offered = with_candidates(by_ruff, fixable_diagnostics(root, path, by_ruff, *options), path)[0]
    changes = same_code(by_ruff, fixes(by_ruff, offered))
    return path, judge(root, path, original, by_ruff, changes, None, settings)


def _codebase(tmp_path: Path, text: str, rules: str) -> Path:
    root = tmp_path / "code"
    root.mkdir()
    (root / "ruff.toml").write_text(f"[lint]\nselect = [{rules}]\n")
    (root / "m.py").write_text(text)
    return root


def test_the_inner_pair_of_three_nested_ifs_is_joined_on_a_second_pass(tmp_path: Path) -> None:
    root = _codebase(tmp_path, THREE_NESTED, '"SIM102"')
    path, verdict = _first_pass(root, "m")
    assert len(verdict.kept) == 1 and verdict.left == ["SIM102"]  # the inner pair, reported now

    kept = more_of_the_same(root, path, THREE_NESTED, verdict, lint_settings(root), ())

    joined = "        if a in st_action and p is not st_actionp[a] and (a, m) not in printed:\n"
    assert kept == 1 and joined in verdict.text and verdict.left == [] and verdict.unfixable == []
    assert len(verdict.kept) == 2
    compile(verdict.text, path, "exec")


def test_a_later_join_counts_the_joins_an_earlier_pass_made(tmp_path: Path) -> None:
    """ply 3.11's ``yacc.py``: the inner join alone stood against the file's two joins too long
    to make, and was dropped as the odd one out, though the first pass had made others."""
    nested = "def f(rows, a, b, c):\n    for r in rows:\n        if a:\n            if b:\n"
    nested += "                if c:\n                    print(r)\n"
    too_long = "def g{n}(x, y):\n    if x_value_here_too:\n        if y_value_here_too:\n"
    too_long += "            return x\n"
    short = "def h{n}(a, b):\n    if a:\n        if b:\n            return a\n"
    parts = [nested, *(too_long.format(n=n) for n in (1, 2)), *(short.format(n=n) for n in (1, 2))]
    text = "\n\n".join(parts)
    root = _codebase(tmp_path, text, '"SIM102"')
    (root / "ruff.toml").write_text('line-length = 40\n[lint]\nselect = ["SIM102"]\n')
    path, verdict = _first_pass(root, "m")
    assert len(verdict.kept) == 3 and sorted(verdict.left) == ["SIM102"] * 3

    kept = more_of_the_same(root, path, text, verdict, lint_settings(root), ())

    assert kept == 1 and "        if a and b and c:\n" in verdict.text


def test_a_join_and_the_statements_it_overlapped_are_both_made_over_two_passes(tmp_path: Path) -> None:
    root = _codebase(tmp_path, JOINED_OVER_STATEMENTS, '"SIM102", "E702"')
    path, verdict = _first_pass(root, "m")
    assert len(verdict.kept) == 1 and len(verdict.left) == 1  # one of the two overlapping fixes

    kept = more_of_the_same(root, path, JOINED_OVER_STATEMENTS, verdict, lint_settings(root), ())

    joined = "        if self.seen[s] and not self.ignore:\n"
    parted = "            print('seen %s' % qname)\n            dump(self.seen)\n"
    assert kept == 1 and verdict.left == [] and joined + parted in verdict.text


def test_nothing_more_is_proposed_where_no_fix_keeps_the_code(tmp_path: Path) -> None:
    text = "def f(x):\n    if x == None:\n        return 1\n    return 2\n"
    root = _codebase(tmp_path, text, '"E711"')
    path, verdict = _first_pass(root, "m")  # E711's fix is not the same bytecode: nothing kept
    verdict.unfixable = ["E711"]  # as the first pass's account may differ from a later reading
    before = (verdict.text, list(verdict.kept))

    kept = more_of_the_same(root, path, text, verdict, lint_settings(root), ())

    assert kept == 0 and (verdict.text, verdict.kept) == before and verdict.unfixable == ["E711"]


REPR = """class Response:
    def __repr__(self):
        if self.content_type:
            ct = ' %s' % self.content_type
        else:
            ct = ''
        body = ' body=%s' % self.body
        return '<' + ct + body + '>'
"""
"""webtest 3.0.7's ``TestResponse.__repr__``: the conditional expression made of the ``if``
overlaps the f-string of its ``%`` format, which no later pass makes (it changes the code)."""


def test_a_format_an_overlapping_fix_keeps_holds_its_twins_back(tmp_path: Path) -> None:
    """A reviewer sent back the function with one ``%`` format left in the conditional
    expression beside its twins made f-strings."""
    root = _codebase(tmp_path, REPR, '"SIM108", "UP"')
    settings = lint_settings(root)
    options = settings.file_options(root, "m.py", REPR)
    by_ruff = ruff_safe_fixes(root, "m.py", REPR, *options)
    offered = with_candidates(by_ruff, fixable_diagnostics(root, "m.py", by_ruff, *options), "m.py")[0]

    verdict = judge(root, "m.py", REPR, by_ruff, fixes(by_ruff, offered), None, settings)

    whys = [d.why for d in verdict.dropped if d.change.label.startswith("UP031")]
    assert verdict.text.count("%s") == 2 and "f'" not in verdict.text  # all in one idiom
    assert sorted(whys) == ["its twin stays", "overlapped another"]
