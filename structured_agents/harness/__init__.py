"""The tool-call harness: how often a model's first turn is a valid tool call, grammar on and off.

::

    reports = await run_harness([load_bundle("docstring")], engine, root, prompts=8)
    print(render_table(reports)); json.dumps([r.to_dict() for r in reports])

``sa harness PATH`` is the command-line face of it.
"""

from structured_agents.harness.measure import CaseReport, OutputCheck, check_output, run_harness
from structured_agents.harness.report import render_table

__all__ = ["CaseReport", "OutputCheck", "check_output", "render_table", "run_harness"]
