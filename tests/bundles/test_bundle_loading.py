"""Loading bundles: finding them, the tools the model sees, bound inputs, context providers."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from bundle_helpers import SAMPLE_PROJECT, SHIPPED, copy_bundle, edit

from structured_agents.bundles import Bundle, find_bundle, list_bundles, load_bundle
from structured_agents.context import RunContext
from structured_agents.pym import PymRunner
from structured_agents.tasks.docstring import discover_docstring_jobs, docstring_text
from structured_agents.types import Message, ToolCall


@pytest.fixture
def docstring(pym_runner: PymRunner) -> Iterator[Bundle]:
    """The tool-call docstring bundle (docstring_calls): its tools are the default's, its
    prompts show worked examples."""
    bundle = load_bundle("docstring_calls", runner=pym_runner)
    yield bundle
    bundle.close()


def test_bundles_are_found_by_name_or_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = SHIPPED / "docstring" / "bundle.yaml"
    assert find_bundle("docstring") == shipped
    assert find_bundle(SHIPPED / "lint") == SHIPPED / "lint" / "bundle.yaml"
    assert find_bundle(str(shipped)) == shipped
    assert {"docstring", "docstring_calls", "lint"} <= set(list_bundles())
    assert find_bundle("docstring_calls") == SHIPPED / "docstring_calls" / "bundle.yaml"

    own = copy_bundle("docstring", tmp_path / "bundles" / "docstring")  # a repository's own bundles win
    monkeypatch.chdir(tmp_path)
    assert find_bundle("docstring") == (own / "bundle.yaml").resolve()


def test_the_model_sees_the_tools_without_their_bound_inputs(docstring: Bundle) -> None:
    tools = {tool.name: tool for tool in docstring.tools.tools()}

    assert list(tools) == ["submit_result"]
    submit = tools["submit_result"]
    # parameter_names is bound from the job: the model does not see it
    assert list(submit.properties) == ["description", "parameters", "returns", "yields"]
    assert submit.required == ("description",)
    assert docstring.config.final_turn_termination_only and docstring.config.max_turns == 2
    sampling = docstring.config.sampling
    assert (sampling.max_new_tokens, sampling.frequency_penalty, sampling.n) == (160, 0.6, 2)


def test_each_job_sees_submit_result_shaped_to_its_target(docstring: Bundle) -> None:
    inputs = {"parameter_names": ["width", "*sizes"], "gives": "returns", "style": "google"}
    assert docstring.config.tool_view is not None

    [submit] = docstring.config.tool_view(docstring.tools.tools(), inputs)

    assert submit.name == "submit_result" and submit.required == ("description", "parameters", "returns")
    assert submit.properties["parameters"]["required"] == ["width", "sizes"]
    assert submit.properties["parameters"]["additionalProperties"] is False


def _execute(
    bundle: Bundle, name: str, arguments: Mapping[str, object], **inputs: object
) -> tuple[bool, str]:
    context = RunContext(run_id="r", inputs=inputs)
    result = asyncio.run(bundle.tools.execute(ToolCall(name, dict(arguments), "c"), context))
    return result.is_error, result.output


def test_bound_inputs_come_from_the_job(docstring: Bundle, pym_runner: PymRunner) -> None:
    parts = {"description": "Area.", "parameters": {"width": "The width.", "depth": "The depth."}}

    bound = _execute(docstring, "submit_result", parts, parameter_names=["width", "height"])
    unbound = _execute(docstring, "submit_result", parts)  # parameter_names defaults to None: any

    assert not bound[0] and json.loads(bound[1]) == {
        "description": "Area.",
        "parameters": {"width": "The width."},
        "removed": ["depth"],
    }
    assert not unbound[0] and json.loads(unbound[1]) == parts

    lint = load_bundle("lint", runner=pym_runner)  # a bound input without a default must be given
    try:
        findings = [{"id": 1, "fix": "- x == None\n+ x is None"}]
        accepted = _execute(lint, "accept_fix", {"id": 1}, findings=findings)
        missing = _execute(lint, "accept_fix", {"id": 1})
    finally:
        lint.close()
    assert accepted == (False, '{"accepted": 1}')
    assert missing[0] and "needs the job input(s) findings" in missing[1]


def _submit(bundle: Bundle, parts: Mapping[str, object], **inputs: object) -> dict[str, object]:
    is_error, output = _execute(bundle, "submit_result", parts, **inputs)
    assert not is_error, output
    submitted: dict[str, object] = json.loads(output)
    return submitted


PARTS: dict[str, object] = {
    "description": "Scale a shape.",
    "parameters": {"shape": "The shape.", "width": "The width.", "self": "The instance."},
    "returns": "The scaled shape.",
}
SCALE = "def scale(shape: Shape, factor: float) -> Shape:\n    return shape * factor\n"


@pytest.mark.parametrize(
    ("style", "written"),
    [
        ("google", "Scale a shape.\n\nArgs:\n    shape: The shape.\n\nReturns:\n    The scaled shape."),
        (
            "numpy",
            "Scale a shape.\n\nParameters\n----------\nshape : Shape\n    The shape.\n\n"
            "Returns\n-------\nShape\n    The scaled shape.",
        ),
        ("sphinx", "Scale a shape.\n\n:param shape: The shape.\n:returns: The scaled shape."),
        ("plain", "Scale a shape."),
    ],
)
def test_submit_drops_what_describes_parameters_the_target_does_not_take(
    docstring: Bundle, style: str, written: str
) -> None:
    names = ["shape", "factor"]
    submitted = _submit(docstring, PARTS, parameter_names=names)

    assert submitted["removed"] == ["width", "self"]
    assert submitted["parameters"] == {"shape": "The shape."}
    inputs = {"parameter_names": names, "gives": "returns", "style": style, "source": SCALE}
    assert docstring_text(submitted, inputs) == written  # factor, left undescribed, is left out


def test_submit_cleans_each_part_and_keeps_what_it_cannot_check(docstring: Bundle) -> None:
    invented = {
        "description": "Area of a circle.",
        "parameters": {"radius": "The radius."},
        "returns": "The area.",
    }
    assert _submit(docstring, invented, parameter_names=[]) == {
        "description": "Area of a circle.",
        "parameters": {},
        "returns": "The area.",
        "removed": ["radius"],
    }
    starred = {"description": "Scale.", "parameters": {"*args": "Shapes.", "**options": "How."}}
    assert _submit(docstring, starred, parameter_names=["*args", "**options"]) == {
        "description": "Scale.",
        "parameters": {"args": "Shapes.", "options": "How."},
    }
    # one line each: quotes, call-format markers and extra spaces cut
    messy = {"description": '"""Sum  the\n  numbers.<end_function_call>', "yields": "'Each  total.'"}
    assert _submit(docstring, messy) == {"description": "Sum the numbers.", "yields": "Each total."}
    # A job from before parameter names were recorded binds none: the parameters are kept as written.
    assert _submit(docstring, invented) == invented

    is_error, output = _execute(docstring, "submit_result", {"description": " <escape>"})
    assert is_error and "the description is empty" in output


def _codebase(root: Path, docstring: str) -> Path:
    root.mkdir()
    body = textwrap.indent(textwrap.dedent(docstring).strip(), "    ")
    (root / "mod.py").write_text(
        f'def f(a, b):\n    """Do it.\n\n{body}\n    """\n\n\ndef g(x):\n    return x\n'
    )
    return root


G_PARTS: dict[str, object] = {
    "description": "Give x back.",
    "parameters": {"x": "Any value."},
    "returns": "X.",
}


@pytest.mark.parametrize(
    ("sections", "style", "written"),
    [
        (
            "Args:\n    a: A.\n\nReturns:\n    B.",
            "google",
            "Give x back.\n\nArgs:\n    x: Any value.\n\nReturns:\n    X.",
        ),
        (
            "Parameters\n----------\na : int\n    A.",
            "numpy",
            "Give x back.\n\nParameters\n----------\nx\n    Any value.\n\nReturns\n-------\nX.",
        ),
        (":param a: A.\n:returns: B.", "sphinx", "Give x back.\n\n:param x: Any value.\n:returns: X."),
    ],
)
def test_the_docstring_style_is_detected_and_the_parts_written_in_it(
    docstring: Bundle, tmp_path: Path, sections: str, style: str, written: str
) -> None:
    root = _codebase(tmp_path / "code", sections)
    [job] = discover_docstring_jobs(root)

    messages = asyncio.run(docstring.initial_messages(job.inputs, root))

    assert job.qualname == "g" and job.inputs["style"] == style
    # the prompt is the same in every style: the worked examples show parts, not formatted text
    shown = [call.arguments for m in messages for call in m.tool_calls]
    assert len(shown) == 3 and all("description" in parts and "docstring" not in parts for parts in shown)
    assert messages[-1].content == "Write the docstring of function g in mod.py.\n\ndef g(x):\n    return x"
    assert docstring_text(G_PARTS, job.inputs) == written


def test_the_sample_project_documents_in_prose_so_its_style_is_plain(
    docstring: Bundle, tmp_path: Path
) -> None:
    jobs = discover_docstring_jobs(SAMPLE_PROJECT)
    assert jobs and {job.inputs["style"] for job in jobs} == {"plain"}
    assert docstring.config.tool_view is not None
    [submit] = docstring.config.tool_view(docstring.tools.tools(), jobs[0].inputs)
    assert list(submit.properties) == ["description"]  # prose: no parameters, nothing handed back

    bare = tmp_path / "bare"  # without docstrings to learn from, the style is google
    bare.mkdir()
    (bare / "mod.py").write_text("def g(x):\n    return x\n")
    assert [job.inputs["style"] for job in discover_docstring_jobs(bare)] == ["google"]


STYLE_PROVIDER = '''"""The style of the target's file: sphinx when it has a :param field, google otherwise."""

from grail import Input, external

path: str = Input("path", description="The file being documented, relative to the project root.")


@external
async def read_file(path: str) -> str:
    """Read a text file of the workspace."""
    ...


text = await read_file(path)
{"style": "sphinx" if ":param " in text else "google"}
'''


def test_prompt_context_providers_choose_the_examples_shown(tmp_path: Path, pym_runner: PymRunner) -> None:
    bundle_dir = copy_bundle("docstring_calls", tmp_path / "bundle")
    (bundle_dir / "context").mkdir()
    (bundle_dir / "context" / "style.pym").write_text(STYLE_PROVIDER)
    manifest = bundle_dir / "bundle.yaml"
    edit(
        manifest,
        "  examples_file: prompts/examples.yaml\n",
        "  examples_file: prompts/examples.yaml\n"
        '  example_variant: "{{ context.style.style }}"\n'
        "  context_providers:\n    style: context/style.pym\n",
    )
    edit(manifest, "    bind: [parameter_names]\n", "    bind: [parameter_names]\n\nexternals: [read_file]\n")
    examples = bundle_dir / "prompts" / "examples.yaml"
    for variant, kind in (("google", "function"), ("sphinx", "method")):
        task = f"- user: |-\n    Write the docstring of {kind}"
        edit(examples, task, f"- variant: {variant}\n  user: |-\n    Write the docstring of {kind}")
    system = bundle_dir / "prompts" / "system.j2"
    edit(system, "You write docstrings", "You write {{ context.style.style }} docstrings")
    root = _codebase(tmp_path / "code", ":param a: A.")
    [job] = discover_docstring_jobs(root)

    bundle = load_bundle(bundle_dir, runner=pym_runner)
    try:
        context = asyncio.run(bundle.context(job.inputs, root))
        messages = bundle.messages(job.inputs, context)
        google = bundle.messages(job.inputs, {"style": {"style": "google"}})
    finally:
        bundle.close()

    def tasks(shown: list[Message]) -> list[str]:
        return [(m.content or "").split("\n")[0] for m in shown[1:-1] if m.role == "user"]

    assert context == {"style": {"style": "sphinx"}}
    assert (messages[0].content or "").startswith("You write sphinx docstrings")
    assert tasks(messages) == [  # the sphinx example, and the one shown in every variant
        "Write the docstring of method Inventory.restock in inventory.py.",
        "Write the docstring of class Thermostat in heating.py.",
    ]
    assert tasks(google)[0] == "Write the docstring of function celsius_to_kelvin in units.py."


def test_tool_context_providers_and_python_registries(
    tmp_path: Path, pym_runner: PymRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle_dir = copy_bundle("docstring_calls", tmp_path / "bundle")
    (tmp_path / "extra_tools.py").write_text(
        "from structured_agents.tools import PythonRegistry\n\n"
        "registry = PythonRegistry('helpers')\n\n\n"
        "@registry.tool\n"
        "def shout(text: str) -> str:\n"
        '    """Say it louder.\n\n    Args:\n        text: What to say.\n    """\n'
        "    return text.upper()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    (bundle_dir / "context").mkdir()
    (bundle_dir / "context" / "note.pym").write_text('"""A note."""\n\n"style notes: be brief"\n')
    manifest = bundle_dir / "bundle.yaml"
    edit(
        manifest,
        "  - type: grail\n    path: tools\n",
        "  - type: grail\n    path: tools\n  - type: python\n    name: helpers\n    module: extra_tools\n",
    )
    submit = "  - name: submit_result\n    bind: [parameter_names]\n"
    provided = submit + "    context_providers: [context/note.pym]\n"
    edit(manifest, submit, provided + "  - name: shout\n    registry: helpers\n")
    sys.modules.pop("extra_tools", None)

    bundle = load_bundle(bundle_dir, runner=pym_runner)
    try:
        context = RunContext(run_id="r")
        submitted = asyncio.run(
            bundle.tools.execute(ToolCall("submit_result", {"description": "Hi."}, "c"), context)
        )
        shouted = asyncio.run(bundle.tools.execute(ToolCall("shout", {"text": "hi"}, "d"), context))
    finally:
        bundle.close()

    assert [tool.name for tool in bundle.tools.tools()] == ["submit_result", "shout"]
    assert submitted.output == 'style notes: be brief\n\n{"description": "Hi."}'
    assert (shouted.output, shouted.is_error) == ("HI", False)
