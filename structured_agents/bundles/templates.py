"""A bundle's Jinja prompts: compiled at load, rendered per job, errors with file and line.

Templates are rendered in Jinja's sandbox with ``StrictUndefined``: a name the job does not
provide is an error, never an empty string. Every error is a
:class:`~structured_agents.bundles.manifest.BundleError` starting with ``file:line`` (the
manifest line of an inline template, or the line of a template file) and naming the field.

At load time each template is also rendered once with typical inputs of the bundle's task
(:func:`sample_inputs`), so a misspelt variable fails the load instead of every job.

Filters added to Jinja's: :mod:`.filters` (``dedent``, ``signature``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from jinja2 import (
    ChainableUndefined,
    Environment,
    FileSystemLoader,
    StrictUndefined,
    Template,
    TemplateError,
    meta,
    nodes,
)
from jinja2 import TemplateSyntaxError as JinjaSyntaxError
from jinja2.sandbox import SandboxedEnvironment

from structured_agents.bundles.filters import FILTERS
from structured_agents.bundles.manifest import BundleError
from structured_agents.tasks import get_task

__all__ = ["PromptTemplates", "TemplateSource", "sample_inputs"]


def sample_inputs(task: str | None) -> dict[str, Any] | None:
    """Inputs shaped like a real job's of ``task`` (None for a bundle without a task)."""
    return None if task is None else get_task(task).sample_inputs()


@dataclass(frozen=True, slots=True)
class TemplateSource:
    """Where one template's text comes from."""

    field: str
    """The manifest field (``initial_context.user_template``)."""
    text: str
    """The template text."""
    file: Path
    """The file holding the text (the manifest, or a template file)."""
    file_line: Callable[[int], int]
    """Maps a line of ``text`` (1-based) to a line of ``file``."""


def _identity(line: int) -> int:
    return line


def _reads_variables(env: Environment, source: TemplateSource) -> bool:
    """Whether the template's output may depend on what it is rendered with: it names a variable
    it does not set, or pulls in another template (whose names it cannot see)."""
    tree = env.parse(source.text)
    pulls = any(
        tree.find(kind) is not None for kind in (nodes.Include, nodes.Extends, nodes.Import, nodes.FromImport)
    )
    return pulls or bool(meta.find_undeclared_variables(tree))


class PromptTemplates:
    """The compiled templates of one bundle, by field name."""

    def __init__(self, directory: Path, sources: list[TemplateSource]) -> None:
        """Compile ``sources``; ``{% include %}`` finds files relative to ``directory``."""
        self._env = SandboxedEnvironment(
            undefined=StrictUndefined,
            autoescape=False,
            keep_trailing_newline=False,
            loader=FileSystemLoader(directory),
        )
        self._env.filters.update(FILTERS)
        self._directory = directory.resolve()
        self._sources = {source.field: source for source in sources}
        self._templates: dict[str, Template] = {}
        for source in sources:
            self._templates[source.field] = self._compile(source)
        self._job_fields = tuple(source.field for source in sources if _reads_variables(self._env, source))

    @classmethod
    def source_file(cls, field: str, path: Path) -> TemplateSource:
        """A template read from ``path`` (BundleError when it cannot be read)."""
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise BundleError(f"{path}: {field}: cannot read the template: {exc.strerror or exc}") from None
        return TemplateSource(field, text, path, _identity)

    def _key(self, source: TemplateSource) -> str:
        return f"<{source.field}>"

    def _compile(self, source: TemplateSource) -> Template:
        try:
            code = self._env.compile(source.text, name=source.field, filename=self._key(source))
        except JinjaSyntaxError as exc:
            raise BundleError(
                f"{source.file}:{source.file_line(exc.lineno)}: {source.field}: template error: {exc.message}"
            ) from None
        return self._env.template_class.from_code(self._env, code, self._env.make_globals(None), None)

    def __contains__(self, field: object) -> bool:
        return field in self._templates

    def render(self, field: str, variables: Mapping[str, Any]) -> str:
        """Render the template of ``field``; BundleError naming the file and line on failure."""
        try:
            return self._templates[field].render(variables)
        except TemplateError as exc:
            raise BundleError(self._locate(field, exc)) from None

    def check(self, variables: Mapping[str, Any], context_names: list[str], *, every: bool = True) -> None:
        """Render every template once with ``variables`` and placeholder context values; with
        ``every=False`` only those that read variables (the others render the same for any job,
        so checking them for one job of a batch checks them for all)."""
        placeholders = {name: ChainableUndefined(name=name) for name in context_names}
        for field in self._templates if every else self._job_fields:
            self.render(field, {**variables, "inputs": variables, "context": placeholders})

    def _locate(self, field: str, exc: TemplateError) -> str:
        """``file:line: field: message`` of an error raised while rendering ``field``."""
        source = self._sources[field]
        message = exc.message if isinstance(exc, JinjaSyntaxError) else str(exc)
        keys = {self._key(s): s for s in self._sources.values()}
        where = f"{source.file}:{source.file_line(1)}"
        for filename, line in _template_frames(exc.__traceback__):
            if filename in keys:
                hit = keys[filename]
                where = f"{hit.file}:{hit.file_line(line)}"
                break
            if Path(filename).resolve().is_relative_to(self._directory):  # an {% include %}d file
                where = f"{filename}:{line}"
                break
        if isinstance(exc, JinjaSyntaxError) and exc.filename and exc.lineno:
            where = f"{exc.filename}:{exc.lineno}"
        return f"{where}: {field}: template error: {message}"


def _template_frames(tb: TracebackType | None) -> list[tuple[str, int]]:
    """(filename, line) of the traceback's frames, innermost first."""
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    return frames[::-1]
