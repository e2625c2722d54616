"""Fixes that keep the code, offered again once a proposal holds the first ones.

Some fixes appear only after others are made. Ruff joins the outer pair of three nested ``if``
statements and reports the inner pair only once that join is made (ply 3.11's ``yacc.py`` kept
``if a and b:`` over a lone ``if c:``, a reviewer's EDIT: fold all three or none), and a
statement after a semicolon on a line a join re-indents overlaps the join and waits for it
(xlrd 2.0.1's ``compdoc.py``). :func:`more_of_the_same` reads ruff's findings on the proposal
again and proposes the fixes with which it compiles to the same bytecode
(:func:`~structured_agents.tasks.same_code.same_code`), judged as the first were but without
the check (the code is the code the check passed), until a pass keeps none or after
:data:`PASSES`. The changes already made count among their families' (a pass's lone join is not
the odd one out of a file whose other joins an earlier pass made).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from structured_agents.tasks.lint_fixes import fixes
from structured_agents.tasks.lint_rewrites import with_candidates
from structured_agents.tasks.lint_settings import LintSettings
from structured_agents.tasks.lint_verdict import Verdict, judge
from structured_agents.tasks.ruff import codes_of, fixable_diagnostics
from structured_agents.tasks.same_code import same_code

__all__ = ["PASSES", "more_of_the_same"]

PASSES = 3
"""The most passes after the first."""


def more_of_the_same(
    root: Path,
    path: str,
    original: str,
    verdict: Verdict,
    settings: LintSettings,
    options: Sequence[str],
    explicit: Path | None = None,
) -> int:
    """Add to ``verdict`` (on ``original``, the file ``root/path``, read by ruff with
    ``options``) the fixes that keep its proposal's code, pass by pass (see the module
    docstring); the number kept. Its text, kept changes, findings left and findings without a
    fix are those after the last pass (the candidates read as the first pass read them:
    ``explicit`` is the root star imports are resolved under, where they are); what a later
    pass drops is not added (its twin of the first pass, if any, is said there)."""
    kept = 0
    for n in range(PASSES + 1):
        text = verdict.text
        diagnostics = fixable_diagnostics(
            root, path, text, *options, offered=settings.lengthening(root, path, original)
        )
        offered, unfixable = with_candidates(text, diagnostics, path, explicit, settings.target.lowest)
        if kept:  # the first pass's text keeps the first pass's account
            verdict.unfixable = codes_of(unfixable)
        changes = same_code(text, fixes(text, offered)) if n < PASSES else []
        if not changes:
            break
        further = judge(root, path, original, text, changes, None, settings, earlier=verdict.kept)
        if further.problem is not None or not further.kept:
            break
        kept += len(further.kept)
        verdict.text, verdict.left = further.text, further.left
        verdict.kept += further.kept
    return kept
