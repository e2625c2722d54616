"""Which of the agent's changes a lint proposal keeps, and why each other one was dropped.

The proposal starts from ruff's safe fixes (``ruff check --fix``) of the file. A change (a fix
of ruff's or a candidate) is kept only when, with ruff's safe fixes applied on top:

1. on its own, the file compiles, uses nothing the codebase's lowest supported Python lacks
   that the original did not (:meth:`~structured_agents.tasks.pytarget.PythonTarget.breaks`),
   writes no new line longer than the project's line length
   (:attr:`~structured_agents.tasks.lint_settings.LintSettings.width`, else the file's own
   longest line; a line already past it may grow a little, as a rename of humanfriendly 10.0's
   114-column ``h, w, hp, wp = ...`` does) and no ``.format()`` call (ruff converts ``%``
   formatting to ``.format()`` and, where it can, on to an f-string: what stays ``.format()`` a
   strict reviewer rejected as churn), no number spelled as the file spells none (ruff writes
   ``0x05F3`` back as ``1523``), deletes no comment (ruff's ``else: if`` to ``elif`` does), and
   ruff finds fewer findings than with ruff's fixes alone;
2. with the other kept changes, it overlaps none of them, and together they still compile and
   leave fewer findings (otherwise the changes are added one at a time, each kept only when
   the file still compiles and ruff finds fewer findings than without it). When all the
   changes together hold and leave at least one finding fewer each, 1 and 2 are taken as
   holding without a trial per change. A change of an idiom (``%`` to f-string) whose twin in
   the same function is dropped here is dropped with it
   (:func:`~structured_agents.tasks.lint_idioms.twins_dropped`), and so are an idiom's changes
   where fewer than half of them stand in the file
   (:func:`~structured_agents.tasks.lint_idioms.scarce_dropped`);
3. when the batch has a check command, the command passes on a copy of the codebase with the
   proposal. When it fails with every kept change, the check runs first without the change
   that rewrites the most (a star import made explicit: other modules may have used what the
   star bound), which is dropped when the rest pass; otherwise the changes are bisected on top
   of ruff's fixes: a half that passes is kept whole, a single change that fails is dropped with the
   check's reason, at most :data:`MAX_CHECK_RUNS` runs a file, or :data:`MAX_QUICK_RUNS` while
   they take under :data:`QUICK_CHECK_S` in all (changes left untried then are
   dropped as not checked). When the check fails with ruff's fixes alone but passes on the
   unchanged codebase, ruff's own fixes break it: the rules ruff fixed in the file are halved
   until one rule whose fixes, left out, make it pass is found (an unused import other modules
   import, imports sorted out of a section a build script cuts), and the proposal is ruff's
   fixes of the other rules, none of the agent's (they were laid out on the text with all of
   ruff's fixes). Where no such rule is found within the runs, the job is rejected; when the
   check fails even unchanged, it fails with the check's reason.

When ruff's safe fixes alone break the lowest Python (possible only below ruff's lowest
target, ``py37``, and only where leaving the rules that break it unfixed did not mend it:
:meth:`~structured_agents.tasks.lint_settings.LintSettings.file_options`), nothing is kept
either: the job is rejected with the reason.
"""

from __future__ import annotations

import difflib
import io
import tokenize
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from structured_agents.tasks.check import CheckCommand, CheckRunner
from structured_agents.tasks.errors import TaskError
from structured_agents.tasks.lint_fixes import Change, apply_changes, apply_edits
from structured_agents.tasks.lint_idioms import scarce_dropped, twins_dropped
from structured_agents.tasks.lint_settings import GROWTH, LintSettings
from structured_agents.tasks.lint_source import Source, compiled
from structured_agents.tasks.ruff import ruff_codes, ruff_diagnostics, ruff_safe_fixes
from structured_agents.tasks.same_code import same_code
from structured_agents.tasks.unused_imports import typing_leftovers

__all__ = ["MAX_CHECK_RUNS", "MAX_QUICK_RUNS", "QUICK_CHECK_S", "Dropped", "Verdict", "judge"]

MAX_CHECK_RUNS = 8
"""Runs of the check command one file's proposal may take, at least."""
MAX_QUICK_RUNS = 32
"""Runs it may take while they are quick (:data:`QUICK_CHECK_S` in all): configobj 5.0.9's
75 tests take a second, and eight runs found none of the few fixes that failed them among 86,
so all 84 others were dropped unchecked."""
QUICK_CHECK_S = 60.0
"""The check time under which one file's proposal may go on past :data:`MAX_CHECK_RUNS`."""


@dataclass(frozen=True, slots=True)
class Dropped:
    """A change left out of the proposal."""

    change: Change
    why: str
    """``did not compile``, ``breaks the lowest Python``, ``made a line too long``, ``wrote
    .format()``, ``respelled a number``, ``deleted a comment``, ``left as many findings``,
    ``overlapped another``, ``another way kept`` (another candidate for the same finding, such
    as B904's ``from err`` beside ``from None``), ``its twin stays`` (a change of the same idiom
    in the same function was dropped: :func:`~structured_agents.tasks.lint_idioms.twins_dropped`),
    ``most of its kind stay`` (fewer than half of its idiom's changes in the file stand:
    :func:`~structured_agents.tasks.lint_idioms.scarce_dropped`), ``failed the check`` or
    ``not checked``."""
    detail: str = ""
    """The compiler's or the check's message."""


@dataclass(slots=True)
class Verdict:
    """What the proposal is."""

    text: str
    """The proposed text: ruff's safe fixes, the kept changes, ruff's safe fixes again."""
    before: list[str]
    """Codes of ruff's findings in the original."""
    by_ruff: list[str]
    """Codes left by ruff's safe fixes alone."""
    left: list[str]
    """Codes left in the proposal."""
    kept: list[Change] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    check_runs: int = 0
    """Runs of the check command."""
    problem: str | None = None
    """Why nothing is proposed although ruff's fixes change the file (they break the check or
    the lowest Python)."""
    target: str = ""
    """The Python the proposal keeps to (:meth:`.PythonTarget.describe`)."""
    rules: str = ""
    """Whose rules ruff checked, where not ruff's own configuration (:meth:`.LintSettings.rules`)."""
    unfixed: list[str] = field(default_factory=list)
    """Rules whose safe fixes broke the check, left unfixed in the file (the proposal is ruff's
    other fixes)."""
    unfixed_because: str = ""
    """The check's message with every safe fix."""
    unfixable: list[str] = field(default_factory=list)
    """Codes of the findings left with no fix offered (none of ruff's or a candidate, or one
    declined: :data:`~structured_agents.tasks.lint_rewrites.DECLINED`)."""

    def summary(self, proposed: int, proposer: str = "agent") -> str:
        """One line: ruff's findings before, with ruff's fixes alone and with the proposal; what
        became of the ``proposed`` changes (``proposer``'s: each dropped one's finding and line,
        and the compiler's or the check's message); the codes left. Then the target line."""
        line = f"ruff {len(self.before)} -> {len(self.left)} (ruff --fix alone: {len(self.by_ruff)})"
        line += f"; {proposer}: {proposed} proposed, {len(self.kept)} kept"
        for why in _REASONS:
            dropped = [d for d in self.dropped if d.why == why]
            if dropped:
                shown = (
                    f"{d.change.label}: {_short(d.detail)}" if why in _DETAILED else d.change.label
                    for d in dropped
                )
                line += f", {len(dropped)} {why} ({'; '.join(shown)})"
        if self.unfixed:
            line += (
                f"; ruff's fixes of {', '.join(self.unfixed)} broke the check "
                f"({_short(self.unfixed_because)}): left unfixed"
            )
        if self.check_runs:
            line += f"; check ran {self.check_runs}x"
        line = f"{line}; left: {', '.join(self.left) or 'none'}"
        if self.unfixable:
            counted = Counter(self.unfixable)
            listed = ", ".join(code if n == 1 else f"{code} x{n}" for code, n in sorted(counted.items()))
            line += f"; no fix offered: {listed}"
        line = f"{line}\ntarget: {self.target}" if self.target else line
        return f"{line}\nrules: {self.rules}" if self.rules else line


_REASONS = (
    "failed the check",
    "did not compile",
    "breaks the lowest Python",
    "made a line too long",
    "wrote .format()",
    "respelled a number",
    "deleted a comment",
    "left as many findings",
    "overlapped another",
    "another way kept",
    "its twin stays",
    "most of its kind stay",
    "not checked",
)
"""Why a change is dropped, in the order a summary lists them."""
_DETAILED = frozenset({"failed the check", "did not compile", "breaks the lowest Python"})
"""Reasons a summary quotes the message of."""
_SHORT = 100
"""Characters of a message a summary quotes."""


def _overlapped(overlapping: Sequence[Change], applied: Sequence[Change]) -> list[Dropped]:
    """Why each of ``overlapping`` (changes ``applied`` overlap) is dropped: another way of
    fixing the same finding was kept, or it overlapped another change."""
    kept = {change.label for change in applied}
    return [
        Dropped(change, "another way kept" if change.label in kept else "overlapped another")
        for change in overlapping
    ]


def _short(text: str) -> str:
    return text if len(text) <= _SHORT else f"{text[: _SHORT // 2 - 3]} ... {text[-(_SHORT // 2 - 2) :]}"


def _compile_error(text: str, path: str) -> str | None:
    try:
        compiled(text, path)
    except (SyntaxError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _literals(text: str) -> tuple[set[str], int]:
    """The spellings of ``text``'s number literals (``0x05F3``) and how many comments it has;
    nothing when it does not tokenize."""
    numbers: set[str] = set()
    comments = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.NUMBER:
                numbers.add(token.string)
            comments += token.type == tokenize.COMMENT
    except (tokenize.TokenError, SyntaxError):
        return set(), 0
    return numbers, comments


class _Judge:
    def __init__(self, root: Path, path: str, original: str, by_ruff: str, settings: LintSettings) -> None:
        self.root, self.path, self.by_ruff = root, path, by_ruff
        self.options = settings.file_options(root, path, original)
        self.breaks = settings.target.checker(root, path, original)
        self.width = settings.width_for(root, path, original)
        self.lines = {
            *original.splitlines(),
            *by_ruff.splitlines(),
        }  # a line ruff's fixes wrote is not a change's
        self.long = [line for line in self.lines if len(line) > self.width]
        self.numbers, self.comments = _literals(by_ruff)
        self.withheld = (
            LintSettings.leaves_unused_imports(self.options) or PurePosixPath(path).name == "__init__.py"
        )
        """Whether ruff removes no unused import in the file: its type comments or doctests use
        one, or it is a package's ``__init__.py`` (a name there may be a re-export)."""
        self.unused = (
            {
                str(finding.get("message"))
                for finding in ruff_diagnostics(root, path, by_ruff, *self.options)
                if finding.get("code") == "F401"
            }
            if self.withheld
            else set()
        )
        """Messages of the unused imports ruff's fixes left, which no change made unused."""

    def proposal(self, changes: Sequence[Change]) -> tuple[str, list[Change], list[Change]]:
        """The text with ``changes`` and ruff's safe fixes on top, without the ``typing`` imports
        the changes left unused where ruff removes no unused import in the file (:attr:`withheld`:
        :func:`~structured_agents.tasks.unused_imports.typing_leftovers`); applied and
        overlapping changes."""
        if not changes:
            return self.by_ruff, [], []
        text, applied, overlapping = apply_changes(self.by_ruff, changes)
        options = LintSettings.text_options(self.options, text)
        return (
            self.without_leftovers(ruff_safe_fixes(self.root, self.path, text, *options)),
            applied,
            overlapping,
        )

    def without_leftovers(self, text: str) -> str:
        if not self.withheld:
            return text
        unused = [
            finding
            for finding in ruff_diagnostics(self.root, self.path, text, *self.options)
            if finding.get("code") == "F401" and finding.get("message") not in self.unused
        ]
        try:
            edits = typing_leftovers(Source(text), unused) if unused else []
        except (SyntaxError, ValueError):
            return text
        return apply_edits(text, edits) if edits else text

    def codes(self, text: str) -> list[str]:
        return ruff_codes(self.root, self.path, text, *self.options)

    def new(self, line: str) -> bool:
        """Whether ``line``, past the width, is new: not a line of the file, nor a part of a
        line of it that was as long (xlrd 2.0.1's 119-column ``if blah: print(...)`` given its
        own line at 114 columns)."""
        if line in self.lines:
            return False
        text = line.strip()
        return not any(text in old and len(line) <= len(old) for old in self.long)

    def lengthened(self, text: str) -> set[int]:
        """The lines of ``text`` (numbered from 1) that stand one for one where a line of ruff's
        fixed text stood that was past the width already, and are at most
        :data:`~structured_agents.tasks.lint_settings.GROWTH`
        columns longer: a change that lengthens a line the project keeps long a little
        (humanfriendly 10.0's 114-column ``h, w, hp, wp = struct.unpack(...)``, whose unused
        names RUF059 renames ``_hp, _wp``) does not make it too long."""
        old, new = self.by_ruff.splitlines(), text.splitlines()
        found: set[int] = set()
        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "replace" and i2 - i1 == j2 - j1:
                found.update(
                    j + 1
                    for j, before in zip(range(j1, j2), old[i1:i2], strict=True)
                    if len(before) > self.width and len(new[j]) <= len(before) + GROWTH
                )
        return found

    def problem(self, text: str, limit: int) -> tuple[str, str] | None:
        """Why ``text`` cannot be proposed: it does not compile, uses what the lowest Python
        lacks, or leaves ``limit`` findings or more."""
        error = _compile_error(text, self.path)
        if error is not None:
            return "did not compile", error
        broken = self.breaks(text)
        if broken is not None:
            return "breaks the lowest Python", broken
        if text.count(".format(") > self.by_ruff.count(".format("):
            return "wrote .format()", "an f-string or the % it replaces reads as well"
        numbers, comments = _literals(text)
        if numbers - self.numbers:
            return "respelled a number", f"{sorted(numbers - self.numbers)[0]} is written nowhere in the file"
        if comments < self.comments:
            return "deleted a comment", f"{self.comments - comments} fewer"
        long = [n for n, line in enumerate(text.splitlines(), 1) if len(line) > self.width and self.new(line)]
        lengthened = self.lengthened(text) if long else set()
        past = [n for n in long if n not in lengthened]
        if past:
            return "made a line too long", f"line {past[0]} over {self.width}"
        left = len(self.codes(text))
        if left >= limit:
            return "left as many findings", f"{left} left, ruff's fixes alone {limit}"
        return None

    def valid(self, changes: Sequence[Change], limit: int, dropped: list[Dropped]) -> list[Change]:
        """The changes that are each good alone (1) and together (2); when all of them together
        compile, break nothing and leave at least one finding fewer each, that is taken as each
        holding (one trial, not one per change: a file can hold hundreds)."""
        if len(changes) > 1:
            text, applied, overlapping = self.proposal(changes)
            if len(applied) > 1 and self.problem(text, limit - len(applied) + 1) is None:
                dropped += _overlapped(overlapping, applied)
                return applied
        alone = []
        for change in changes:
            problem = self.problem(self.proposal([change])[0], limit)
            if problem is None:
                alone.append(change)
            else:
                dropped.append(Dropped(change, *problem))
        text, applied, overlapping = self.proposal(alone)
        dropped += _overlapped(overlapping, applied)
        if not applied or self.problem(text, limit) is None:
            return applied
        kept: list[Change] = []
        for change in applied:  # together they do not hold: one at a time
            bound = len(self.codes(self.proposal(kept)[0])) if kept else limit
            problem = self.problem(self.proposal([*kept, change])[0], bound)
            if problem is None:
                kept.append(change)
            else:
                dropped.append(Dropped(change, *problem))
        return kept


def _bisect(
    passes: Callable[[Sequence[Change]], str | None],
    base: list[Change],
    changes: list[Change],
    dropped: list[Dropped],
    budget: Callable[[], bool],
    *,
    known: str | None = None,
) -> list[Change]:
    """The changes of ``changes`` kept on top of ``base`` (which passes): see the module doc.
    ``known``: the check's reason when ``base + changes`` is known to fail already."""
    if not changes:
        return []
    reason = known
    if reason is None:
        if not budget():
            dropped += [Dropped(change, "not checked", "the check runs are spent") for change in changes]
            return []
        reason = passes([*base, *changes])
        if reason is None:
            return changes
    if len(changes) == 1:
        dropped.append(Dropped(changes[0], "failed the check", reason))
        return []
    half = len(changes) // 2
    left = _bisect(passes, base, changes[:half], dropped, budget)
    return left + _bisect(passes, [*base, *left], changes[half:], dropped, budget)


def judge(
    root: Path,
    path: str,
    original: str,
    by_ruff: str,
    changes: Sequence[Change],
    check: CheckCommand | None,
    settings: LintSettings,
    *,
    rejected: Sequence[Change] = (),
    earlier: Sequence[Change] = (),
) -> Verdict:
    """The proposal for ``path`` (see the module docstring); ``by_ruff`` is ``original`` with
    ruff's safe fixes (given ``settings``); ``rejected``: fixes offered and not proposed (the
    model's rejections, and the fixes past the most a job shows, which stay as they are too),
    whose twins are dropped as the verdict's own drops' are; ``earlier``: changes an earlier
    pass made to reach ``by_ruff``, which count among their families' changes that stand. Raises
    TaskError when the check fails on the unchanged codebase."""
    judge = _Judge(root, path, original, by_ruff, settings)
    before, ruff_left = judge.codes(original), judge.codes(by_ruff)
    verdict = Verdict(
        by_ruff, before, ruff_left, ruff_left, target=settings.target.describe(), rules=settings.rules()
    )
    broken = judge.breaks(by_ruff) if by_ruff != original else None
    if broken is not None:
        verdict.problem = f"ruff's safe fixes break the lowest Python ({broken})"
        return verdict
    kept = judge.valid(changes, len(ruff_left), verdict.dropped)
    overlapped = [d.change for d in verdict.dropped if d.why == "overlapped another"]
    later = same_code(by_ruff, overlapped)  # a later pass makes these (more_of_the_same)
    failed = [d.change for d in verdict.dropped if d.why != "another way kept" and d.change not in later]
    failed += rejected
    stray = twins_dropped(by_ruff, kept, failed)
    kept = [change for change in kept if change not in stray]
    scarce = scarce_dropped([*kept, *earlier], [*failed, *stray])
    kept = [change for change in kept if change not in scarce]
    verdict.dropped += [Dropped(change, "its twin stays") for change in stray]
    verdict.dropped += [Dropped(change, "most of its kind stay") for change in scarce]
    if check is not None:
        with CheckRunner(check, root, path) as runner:
            kept = _checked(judge, runner, original, kept, verdict)
            verdict.check_runs = runner.runs
    if verdict.problem is None:
        verdict.text = judge.proposal(kept)[0]
        verdict.kept = kept
        verdict.left = judge.codes(verdict.text) if verdict.text != by_ruff else ruff_left
    return verdict


def _checked(
    judge: _Judge, runner: CheckRunner, original: str, kept: list[Change], verdict: Verdict
) -> list[Change]:
    """The kept changes that pass the check (see the module docstring)."""

    def passes(changes: Sequence[Change]) -> str | None:
        outcome = runner.run(judge.proposal(changes)[0])
        return None if outcome.passed else outcome.reason

    failure = passes(kept) if kept else None
    if kept and failure is None:
        return kept
    if kept or judge.by_ruff != original:
        base = passes([])
        if base is not None:
            if judge.by_ruff == original or not runner.run(original).passed:
                raise TaskError(f"the check {runner.check.command!r} fails on the codebase as it is ({base})")
            fixed = sorted(set(Counter(verdict.before) - Counter(verdict.by_ruff)))
            mended = _unfixed(judge, runner, original, fixed)
            if mended is None:
                verdict.problem = f"ruff's safe fixes break the check ({base})"
            else:  # the proposal is ruff's other fixes
                verdict.unfixed, judge.by_ruff = mended[0], mended[1]
                verdict.unfixed_because = base
            return []

    def budget() -> bool:
        quick = runner.runs < MAX_QUICK_RUNS and runner.seconds < QUICK_CHECK_S
        return runner.runs < MAX_CHECK_RUNS or quick

    largest = max(kept, key=_size) if len(kept) > 2 else None
    if largest is not None and budget():  # the likeliest to break it: tried out first
        rest = [change for change in kept if change is not largest]
        if passes(rest) is None:
            verdict.dropped.append(Dropped(largest, "failed the check", failure or "the check failed"))
            return rest
    return _bisect(passes, [], kept, verdict.dropped, budget, known=failure)


def _unfixed(
    judge: _Judge, runner: CheckRunner, original: str, fixed: list[str]
) -> tuple[list[str], str] | None:
    """The rules whose safe fixes break the check (which passes on ``original``), with ruff's
    safe fixes of the others, where such rules are found within :data:`MAX_CHECK_RUNS`: the
    rules ruff ``fixed`` in the file are halved, the half whose fixes left out make the check
    pass taken on (one rule's fixes commonly break it: an unused import other modules import,
    an import sorted out of a section a build script cuts), down to one rule; the smallest set
    found that passes."""
    found: tuple[list[str], str] | None = None

    def passes(codes: list[str]) -> bool:
        nonlocal found
        options = (*judge.options, "--unfixable", ",".join(codes))
        text = ruff_safe_fixes(judge.root, judge.path, original, *options)
        if text == original or not runner.run(text).passed:
            return False
        found = codes, text
        return True

    rules = fixed
    while len(rules) > 1 and runner.runs < MAX_CHECK_RUNS:
        half = rules[: len(rules) // 2]
        rules = half if passes(half) else rules[len(half) :]
    if len(rules) == 1 and runner.runs < MAX_CHECK_RUNS and (found is None or found[0] != rules):
        passes(rules)
    return found


def _size(change: Change) -> int:
    """How much of the text ``change`` rewrites (replaced and written characters)."""
    return sum(end - start + len(content) for start, end, content in change.edits)
