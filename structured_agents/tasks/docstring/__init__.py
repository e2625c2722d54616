"""The ``docstring`` task: a docstring for every function, method and class that lacks one.

Discovery (:mod:`.targets`): one job per target, its inputs carrying the target's source, its
parameter names, what it hands back (``gives``) and the codebase's docstring style.

Each job's termination tool is shaped to its target (:func:`.grounding.narrow`): the model
submits a one-line ``description``, a line per real parameter and one for what the target
returns or yields; the grammar lets it name no parameter the target does not take. The words
of the bundle's prompts that the target's file does not use are banned at decode time. Of a
turn's candidates the one with the fewest verifier findings is kept, then the one that makes the
target's body likeliest (:func:`review_body`, where the bundle asks for reviews), then the best
grounded in the target's code (:class:`.grounding.Grounding`).

Outcome: the parts are repaired by the verifier (:mod:`.verify`), written out in the
codebase's style (:mod:`.style`) and set on the target with libcst; the new module must differ
from the old one only in docstrings. What the verifier, ruff's ``DOC`` rules (:mod:`.doc_rules`)
or a low review margin still find wrong is stored with the change as the reasons it needs review.
A submission ``{"docstring": TEXT}`` (a bundle that lets the model write the whole text) is
checked, not repaired, and set as it is.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, cast

from structured_agents import syntax
from structured_agents.context import RunContext
from structured_agents.jobs.outline import body_of, outline
from structured_agents.jobs.spec import JobSpec
from structured_agents.kernel.engine import MAX_REVIEW_CHARS, Review
from structured_agents.kernel.result import RunResult
from structured_agents.patches import docstring_change
from structured_agents.tasks.base import read_target, submission
from structured_agents.tasks.docstring.doc_rules import doc_rule_findings
from structured_agents.tasks.docstring.grounding import Grounding, narrow
from structured_agents.tasks.docstring.style import STYLES, Style, clean_line, format_docstring, summary_line
from structured_agents.tasks.docstring.targets import (
    DOCSTRING_KIND,
    DocstringTarget,
    discover_docstring_jobs,
    find_docstring_targets,
)
from structured_agents.tasks.docstring.verify import Finding, Parts, Target, verify
from structured_agents.tasks.errors import TaskError
from structured_agents.tasks.protocol import Guidance, Outcome

__all__ = [
    "DOCSTRING_KIND",
    "DocstringTarget",
    "DocstringTask",
    "code_without_docstrings",
    "discover_docstring_jobs",
    "docstring_text",
    "find_docstring_targets",
]

LOW_CONFIDENCE = -8.0
"""A review margin (``RunResult.confidence``, where a bundle asks for reviews) below which a
docstring is flagged: the code it documents is that many nats less likely after it than after
none. Measured with the shipped model on toolz, inflection, boltons and more-itertools, margins
of docstrings a strict reviewer accepted or would edit ran from -6.6 to +0.8, and the margin did
not tell them from rejected ones above that; only the outliers below are flagged."""

_SAMPLE_MODULE = "def scale(value: float, factor: float = 2.0) -> float:\n    return value * factor\n"


def code_without_docstrings(text: str) -> str:
    """``ast.dump`` of a module with every module, class and function docstring removed."""
    tree = syntax.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree)


def docstring_text(submitted: Mapping[str, Any], inputs: Mapping[str, Any]) -> str:
    """The docstring a submission stands for: its parts written out in the job's style, or
    the ``docstring`` it gave whole."""
    if isinstance(submitted.get("docstring"), str):
        return str(submitted["docstring"]).strip()
    summary = summary_line(str(submitted.get("description") or ""))
    if not summary:
        return ""
    described = submitted.get("parameters") or {}
    described = described if isinstance(described, Mapping) else {}
    entries = [
        (str(name), clean_line(str(described.get(str(name).lstrip("*"), ""))))
        for name in inputs.get("parameter_names") or ()
    ]
    kind = inputs.get("gives")
    gives = (str(kind), clean_line(str(submitted.get(kind) or ""))) if kind in ("returns", "yields") else None
    style = inputs.get("style")
    chosen = cast(Style, style) if style in STYLES else "google"
    return format_docstring(chosen, summary, entries, gives, source=str(inputs.get("source") or ""))


def docstring_lines(text: str, qualname: str, def_line: int | None) -> range:
    """The lines (1-based) of the docstring of ``qualname`` (defined on ``def_line``) in the
    module ``text``; empty when it has none."""
    name = qualname.rpartition(".")[2]
    for node in ast.walk(syntax.parse(text)):
        if (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and node.name == name
            and (def_line is None or node.lineno == def_line)
            and node.body
        ):
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                return range(first.lineno, (first.end_lineno or first.lineno) + 1)
    return range(0)


def review_body(context: RunContext) -> Review | None:
    """What a docstring job's candidates are scored by: how likely each makes the body of the
    code it documents (outlined and bounded as the prompt shows it), against a docstring
    closed at once; None for a definition without a body of its own lines."""
    body = body_of(outline(str(context.inputs.get("source") or "")))
    return Review("\n" + body[: MAX_REVIEW_CHARS - 1], empty='"""') if body.strip() else None


class DocstringTask:
    """The ``docstring`` task (see the module docstring)."""

    name = DOCSTRING_KIND
    option_names: frozenset[str] = frozenset()

    def discover(
        self, root: Path, *, overwrite: bool = False, options: Mapping[str, Any] | None = None
    ) -> list[JobSpec]:
        """One job per target lacking a docstring (every target with ``overwrite``; the task
        reads no options)."""
        return discover_docstring_jobs(root, include_documented=overwrite)

    def sample_inputs(self) -> dict[str, Any]:
        """The inputs of a job for a small function."""
        target = find_docstring_targets(_SAMPLE_MODULE)[0]
        return {"path": "pkg/module.py", "style": "google", **target.inputs()}

    def guidance(self, termination: str, fixed_texts: Sequence[str], shown_texts: Sequence[str]) -> Guidance:
        """Each job's termination tool shaped to its target, its candidates chosen by grounding,
        the words of the bundle's prompts that its target's file does not use banned."""
        grounding = Grounding.of(termination, fixed_texts, shown_texts)
        return Guidance(
            tool_view=partial(narrow, termination=termination),
            choose=grounding.choose,
            bad_words=grounding.bad_words,
            review=review_body,
        )

    def outcome(self, job: JobSpec, result: RunResult, root: Path, options: Mapping[str, Any]) -> Outcome:
        """Set the submitted docstring, repaired by the verifier, on the target; what the
        verifier (and ruff's ``DOC`` rules, and the model's confidence where it was measured)
        still finds wrong flags the change for review (:mod:`.verify`)."""
        try:
            submitted = json.loads(submission(result))
        except ValueError as exc:
            raise TaskError(f"the submission is not JSON: {exc}") from exc
        if not isinstance(submitted, dict):
            raise TaskError(f"the submission is not an object: {submitted!r}")
        original = read_target(job, root)
        target = Target.of(job.inputs, original)
        if isinstance(submitted.get("docstring"), str):  # given whole: checked, not repaired
            docstring = docstring_text(submitted, job.inputs)
            verdict = verify(Parts(docstring.split("\n", 1)[0]), target)
        else:
            verdict = verify(Parts.of(submitted), target)
            docstring = docstring_text(verdict.parts.arguments(), job.inputs)
        if not docstring:
            raise TaskError("the submitted docstring is empty")
        line = job.inputs.get("def_line")
        change = docstring_change(
            job.path, original, job.qualname, docstring, line=line if isinstance(line, int) else None
        )
        if code_without_docstrings(change.new_text) != code_without_docstrings(original):
            raise TaskError("the change would alter code, not only the docstring")
        findings = list(verdict.findings)
        lines = docstring_lines(change.new_text, job.qualname, line if isinstance(line, int) else None)
        findings += doc_rule_findings(root, job.path, change.new_text, lines)
        if result.confidence is not None and result.confidence < LOW_CONFIDENCE:
            findings.append(
                Finding("low-confidence", f"the code is {-result.confidence:.1f} nats less likely after it")
            )
        return Outcome(
            True,
            change,
            summary=docstring.splitlines()[0][:200],
            flags=tuple(str(finding) for finding in findings),
            unique_summary=True,
        )
