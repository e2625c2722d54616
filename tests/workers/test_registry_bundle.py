"""The docstring_team bundle through the cluster: an agent run as a tool, a versioned MCP server.

The GPU worker decodes the docstring agent's turns; the tool calls run in the CPU worker,
where the bundle's registry file starts the style-guide MCP server (version 2.0.0, by the
constraint ``^2``) and the summarizer agent runs inside the ``summarize_code`` call on the
worker's engine for agents as tools (``SA_WORKERS__AGENT_ENGINE__*``: the scripted engine
here; a model server in a deployment: the CPU workers load no model).
"""

from __future__ import annotations

import json
from pathlib import Path

from cluster_fixtures import SCRIPTED_DOCSTRING, SCRIPTED_SUMMARY, Cluster
from team_project import write_team_project

from structured_agents.tasks.docstring import discover_docstring_jobs
from structured_agents.workers.enqueue import enqueue


def test_docstring_team_runs_its_agent_tool_and_mcp_server_in_the_workers(
    cluster: Cluster, tmp_path: Path
) -> None:
    project = write_team_project(tmp_path / "project")  # targets of its own: the store is shared
    targets = {(job.path, job.qualname): job for job in discover_docstring_jobs(project)}
    assert len(targets) == 4

    batch_id = enqueue(cluster.store, cluster.app, "docstring_team", project).batch_id
    cluster.wait(batch_id, timeout=180)

    failed = {run.qualname: run.error for run in cluster.store.list_runs(batch_id, "failed")}
    assert failed == {}
    assert cluster.store.batch_counts(batch_id).by_status == {"succeeded": len(targets)}
    for run in cluster.store.list_runs(batch_id):
        calls = cluster.store.tool_calls(run.id)
        assert [call.name for call in calls] == ["summarize_code", "style_rules", "submit_result"]
        assert [call.is_error for call in calls] == [False] * 3, [call.output for call in calls]
        assert calls[0].output == SCRIPTED_SUMMARY
        rules = json.loads(calls[1].output)
        assert (run.target_path, run.qualname) in targets
        assert (rules["server_version"], rules["target"]) == ("2.0.0", run.qualname)
        assert SCRIPTED_DOCSTRING in calls[2].output
