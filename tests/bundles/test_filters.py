"""The Jinja filters bundles get: ``signature`` cuts a definition after its signature."""

from __future__ import annotations

import asyncio
from pathlib import Path

from structured_agents.bundles import load_bundle
from structured_agents.bundles.filters import signature


def test_signature_keeps_decorators_and_a_signature_over_several_lines() -> None:
    source = "    @property\n    def area(\n        self,\n    ) -> float:\n        return self.w * self.h\n"
    assert signature(source) == "@property\ndef area(\n    self,\n) -> float:\n"


def test_signature_of_a_class_and_of_a_body_on_the_def_line() -> None:
    assert signature("class A(B):\n    x = 1\n") == "class A(B):\n"
    assert signature("def f(): return 1\n") == "def f():\n"


def test_text_that_is_not_one_definition_comes_back_dedented() -> None:
    assert signature("  x = (\n") == "x = (\n"
    assert signature("  a = 1\n  b = 2\n") == "a = 1\nb = 2\n"


def test_the_docstring_bundle_shows_the_signature_with_its_docstring_opened(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text("@cache\ndef g(x, y=2):\n    return x + y\n")
    bundle = load_bundle("docstring")  # the default: a base model writes the docstring itself
    try:
        [job] = bundle.discover_jobs(tmp_path)
        messages = asyncio.run(bundle.initial_messages(job.inputs, tmp_path))
        prompt = bundle.plugin.render_prompt(messages, bundle.tools.tools())
    finally:
        bundle.close()
    assert prompt.endswith('# mod.py\n@cache\ndef g(x, y=2):\n    """')
    assert not [call for message in messages for call in message.tool_calls]  # no worked examples
