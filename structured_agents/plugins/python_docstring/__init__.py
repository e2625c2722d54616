"""A base code model's native format: a call written as the docstring of the code it is shown.

==============  ============================================================
``plugin``      :class:`PythonDocstringPlugin`: render prompts, build grammars, parse responses
``form``        a tool's arguments as docstring text, and back
``grammar``     the EBNF of that text
==============  ============================================================
"""

from __future__ import annotations

from structured_agents.plugins.python_docstring.plugin import PythonDocstringPlugin

__all__ = ["PythonDocstringPlugin"]
