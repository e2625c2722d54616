"""The Jinja filters bundles get: ``signature`` cuts a definition after its signature."""

from __future__ import annotations

import asyncio
from pathlib import Path

from structured_agents.bundles import load_bundle
from structured_agents.bundles.filters import signature
from structured_agents.jobs.outline import body_of, outline


def test_signature_keeps_decorators_and_a_signature_over_several_lines() -> None:
    source = "    @property\n    def area(\n        self,\n    ) -> float:\n        return self.w * self.h\n"
    assert signature(source) == "@property\ndef area(\n    self,\n) -> float:\n"


def test_signature_of_a_class_and_of_a_body_on_the_def_line() -> None:
    assert signature("class A(B):\n    x = 1\n") == "class A(B):\n"
    assert signature("def f(): return 1\n") == "def f():\n"


def test_text_that_is_not_one_definition_comes_back_dedented() -> None:
    assert signature("  x = (\n") == "x = (\n"
    assert signature("  a = 1\n  b = 2\n") == "a = 1\nb = 2\n"


def test_the_docstring_bundle_shows_the_code_then_its_signature_with_its_docstring_opened(
    tmp_path: Path,
) -> None:
    (tmp_path / "mod.py").write_text("@cache\ndef g(x, y=2):\n    return x + y\n")
    bundle = load_bundle("docstring")  # the default: a base model writes the docstring itself
    try:
        [job] = bundle.discover_jobs(tmp_path)
        messages = asyncio.run(bundle.initial_messages(job.inputs, tmp_path))
        prompt = bundle.plugin.render_prompt(messages, bundle.tools.tools())
    finally:
        bundle.close()
    code = "@cache\ndef g(x, y=2):\n    return x + y\n"
    assert prompt.endswith(f'# mod.py\n{code}\n\n# g, documented:\n@cache\ndef g(x, y=2):\n    """')
    assert not [call for message in messages for call in message.tool_calls]  # no worked examples


def test_outline_shows_a_function_whole_without_its_docstring() -> None:
    source = '    def f(x):\n        """Doc\n        more."""\n        y = x\n        return y\n'
    assert outline(source) == "def f(x):\n    y = x\n    return y\n"


def test_outline_cuts_a_class_s_methods_to_their_signatures() -> None:
    source = (
        "class A(B):\n"
        '    """Doc."""\n'
        "    x: int = 1\n"
        "    def f(self, a):\n"
        '        """f."""\n'
        "        return a + 1\n"
        "\n"
        "    @property\n"
        "    def g(self): return 2\n"
        "    async def h(self,\n"
        "                b):\n"
        "        await b\n"
    )
    assert outline(source) == (
        "class A(B):\n    x: int = 1\n    def f(self, a):\n        ...\n\n    @property\n"
        "    def g(self): return 2\n    async def h(self,\n                b):\n        ...\n"
    )


def test_outline_is_bounded_and_marks_the_cut() -> None:
    source = "def f(x):\n" + "".join(f"    a{i} = {i}\n" for i in range(100))
    shown = outline(source, limit=10).splitlines()
    assert len(shown) == 10 and shown[-1] == "    ..." and shown[-2] == "    a7 = 7"


def test_text_that_is_not_one_definition_is_outlined_as_it_is() -> None:
    assert outline("  a = 1\n  b = 2\n") == "a = 1\nb = 2\n"
    assert body_of("  a = 1\n") == ""


def test_body_of_a_definition_is_its_statements_at_one_indent_without_the_docstring() -> None:
    source = (
        '    @x\n    def f(a):\n        """Doc."""\n        if a:\n            return 1\n        return 2\n'
    )
    assert body_of(source) == "    if a:\n        return 1\n    return 2\n"
    assert body_of("def f(): return 1\n") == ""  # no body lines of its own
