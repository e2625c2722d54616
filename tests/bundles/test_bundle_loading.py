"""Loading bundles: finding them, the tools the model sees, bound inputs, context providers."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from bundle_helpers import SAMPLE_PROJECT, SHIPPED, copy_bundle, edit

from structured_agents.bundles import Bundle, find_bundle, list_bundles, load_bundle
from structured_agents.context import RunContext
from structured_agents.pym import PymRunner
from structured_agents.tasks.docstring import discover_docstring_jobs
from structured_agents.types import ToolCall


@pytest.fixture
def docstring(pym_runner: PymRunner) -> Iterator[Bundle]:
    bundle = load_bundle("docstring", runner=pym_runner)
    yield bundle
    bundle.close()


def test_bundles_are_found_by_name_or_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = SHIPPED / "docstring" / "bundle.yaml"
    assert find_bundle("docstring") == shipped
    assert find_bundle(SHIPPED / "lint") == SHIPPED / "lint" / "bundle.yaml"
    assert find_bundle(str(shipped)) == shipped
    assert {"docstring", "lint"} <= set(list_bundles())

    own = copy_bundle("docstring", tmp_path / "bundles" / "docstring")  # a repository's own bundles win
    monkeypatch.chdir(tmp_path)
    assert find_bundle("docstring") == (own / "bundle.yaml").resolve()


def test_the_model_sees_the_tools_without_their_bound_inputs(docstring: Bundle) -> None:
    tools = {tool.name: tool for tool in docstring.tools.tools()}

    assert list(tools) == ["submit_result", "read_type_hints"]
    assert tools["read_type_hints"].properties == {} and tools["read_type_hints"].required == ()
    assert tools["submit_result"].required == ("docstring",)
    assert docstring.config.final_turn_termination_only and docstring.config.max_turns == 2
    assert (docstring.config.sampling.max_new_tokens, docstring.config.sampling.frequency_penalty) == (
        160,
        0.6,
    )


def test_bound_inputs_come_from_the_job(docstring: Bundle) -> None:
    source = "def area(width: float, height: float = 1.0) -> float:\n    return width * height\n"
    context = RunContext(run_id="r", inputs={"source": source})

    result = asyncio.run(docstring.tools.execute(ToolCall("read_type_hints", {}, "c1"), context))
    missing = asyncio.run(docstring.tools.execute(ToolCall("read_type_hints", {}, "c2"), RunContext("r")))

    assert not result.is_error
    assert '"name": "height", "annotation": "float", "default": "1.0"' in result.output
    assert missing.is_error and "needs the job input(s) source" in missing.output


def _submit(bundle: Bundle, docstring: str, **inputs: object) -> dict[str, object]:
    context = RunContext(run_id="r", inputs=inputs)
    result = asyncio.run(
        bundle.tools.execute(ToolCall("submit_result", {"docstring": docstring}, "c"), context)
    )
    assert not result.is_error, result.output
    submitted: dict[str, object] = json.loads(result.output)
    return submitted


GOOGLE = """Scale a shape.

Args:
    shape (Shape): The shape.
    width: The width,
        on two lines.
    self: The instance.

Returns:
    The scaled shape."""
NUMPY = """Scale a shape.

Parameters
----------
shape : Shape
    The shape.
width, height : float
    The size.

Returns
-------
Shape
    The scaled shape."""
SPHINX = """Scale a shape.

:param Shape shape: The shape.
:param width: The width,
    on two lines.
:type width: float
:returns: The scaled shape."""


@pytest.mark.parametrize(
    ("text", "kept", "removed"),
    [
        (GOOGLE, "Args:\n    shape (Shape): The shape.\n\nReturns:", ["width", "self"]),
        (NUMPY, "----------\nshape : Shape\n    The shape.\n\nReturns", ["width", "height"]),
        (SPHINX, ":param Shape shape: The shape.\n:returns:", ["width"]),
    ],
)
def test_submit_drops_what_describes_parameters_the_target_does_not_take(
    docstring: Bundle, text: str, kept: str, removed: list[str]
) -> None:
    submitted = _submit(docstring, text, parameters=["shape", "factor"])
    assert submitted["removed"] == removed
    written = str(submitted["docstring"])
    assert written.startswith("Scale a shape.\n\n") and kept in written
    assert written.endswith("The scaled shape.") and "width" not in written and "self" not in written


def test_submit_drops_a_parameter_section_left_empty_and_keeps_what_it_cannot_check(
    docstring: Bundle,
) -> None:
    invented = "Area of a circle.\n\nArgs:\n    radius: The radius.\n\nReturns:\n    The area."
    assert _submit(docstring, invented, parameters=[]) == {
        "docstring": "Area of a circle.\n\nReturns:\n    The area.",
        "removed": ["radius"],
    }
    right = "Scale.\n\nArgs:\n    *args: Shapes.\n    **options: How."
    assert _submit(docstring, right, parameters=["*args", "**options"]) == {"docstring": right}
    tight = "Bind.\n\nParameters\n----------\nkey: str\n    The key.\nfile:str\n    A file."  # no spaces
    assert _submit(docstring, tight, parameters=["key"]) == {
        "docstring": "Bind.\n\nParameters\n----------\nkey: str\n    The key.",
        "removed": ["file"],
    }
    stray = "Sum.\n\nArgs:\n    : stray text\n    a: The a."  # an entry without a name goes unreported
    assert _submit(docstring, stray, parameters=["a"]) == {"docstring": "Sum.\n\nArgs:\n    a: The a."}
    # A job from before parameters were recorded binds none: the docstring is kept as written.
    assert _submit(docstring, invented) == {"docstring": invented}


def _codebase(root: Path, docstring: str) -> Path:
    root.mkdir()
    body = textwrap.indent(textwrap.dedent(docstring).strip(), "    ")
    (root / "mod.py").write_text(
        f'def f(a, b):\n    """Do it.\n\n{body}\n    """\n\n\ndef g(x):\n    return x\n'
    )
    return root


@pytest.mark.parametrize(
    ("sections", "style", "example_line"),
    [
        ("Args:\n    a: A.\n\nReturns:\n    B.", "google", "Args:"),
        ("Parameters\n----------\na : int\n    A.", "numpy", "----------"),
        (":param a: A.\n:returns: B.", "sphinx", ":param "),
    ],
)
def test_the_docstring_style_is_detected_and_its_examples_shown(
    docstring: Bundle, tmp_path: Path, sections: str, style: str, example_line: str
) -> None:
    root = _codebase(tmp_path / "code", sections)
    [job] = discover_docstring_jobs(root)

    context = asyncio.run(docstring.context(job.inputs, root))
    messages = docstring.messages(job.inputs, context)

    assert context["docstring_style"]["style"] == style
    assert f"in the {style} style" in (messages[0].content or "")
    shown = [call.arguments["docstring"] for m in messages for call in m.tool_calls]
    assert shown and all(example_line in text for text in shown if "\n" in text)
    assert messages[-1].content == "Write the docstring of function g in mod.py.\n\ndef g(x):\n    return x"


def test_the_sample_project_has_no_sections_so_google_is_the_default(docstring: Bundle) -> None:
    job = discover_docstring_jobs(SAMPLE_PROJECT)[0]

    context = asyncio.run(docstring.context(job.inputs, SAMPLE_PROJECT))

    assert context["docstring_style"] == {
        "style": "google",
        "counts": {"google": 0, "numpy": 0, "sphinx": 0},
        "sampled": context["docstring_style"]["sampled"],
    }
    assert context["docstring_style"]["sampled"] >= 2


def test_tool_context_providers_and_python_registries(
    tmp_path: Path, pym_runner: PymRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle_dir = copy_bundle("docstring", tmp_path / "bundle")
    (tmp_path / "extra_tools.py").write_text(
        "from structured_agents.tools import PythonRegistry\n\n"
        "registry = PythonRegistry('helpers')\n\n\n"
        "@registry.tool\n"
        "def shout(text: str) -> str:\n"
        '    """Say it louder.\n\n    Args:\n        text: What to say.\n    """\n'
        "    return text.upper()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    (bundle_dir / "context" / "note.pym").write_text('"""A note."""\n\n"style notes: be brief"\n')
    manifest = bundle_dir / "bundle.yaml"
    edit(
        manifest,
        "  - type: grail\n    path: tools\n",
        "  - type: grail\n    path: tools\n  - type: python\n    name: helpers\n    module: extra_tools\n",
    )
    submit = "  - name: submit_result\n    bind: [parameters]\n"
    provided = submit + "    context_providers: [context/note.pym]\n"
    edit(manifest, submit, provided + "  - name: shout\n    registry: helpers\n")
    sys.modules.pop("extra_tools", None)

    bundle = load_bundle(bundle_dir, runner=pym_runner)
    try:
        context = RunContext(run_id="r")
        submitted = asyncio.run(
            bundle.tools.execute(ToolCall("submit_result", {"docstring": "Hi."}, "c"), context)
        )
        shouted = asyncio.run(bundle.tools.execute(ToolCall("shout", {"text": "hi"}, "d"), context))
    finally:
        bundle.close()

    assert [tool.name for tool in bundle.tools.tools()] == ["submit_result", "shout", "read_type_hints"]
    assert submitted.output == 'style notes: be brief\n\n{"docstring": "Hi."}'
    assert (shouted.output, shouted.is_error) == ("HI", False)
