"""Ctrl-C on a real ``sa run`` process: it stops cleanly, and the same command resumes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from structured_agents.store import SqlStore

HELPERS = Path(__file__).resolve().parent

SLOW_SA = textwrap.dedent(
    """
    import os, signal, sys, time
    # Ctrl-C as a terminal delivers it, even when this test runs in a background job (a
    # non-interactive shell starts those with SIGINT ignored, which the child inherits)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.path[:0] = [{helpers!r}, {tests!r}]
    from runner_helpers import write_docstring
    from structured_agents.cli.main import app
    from structured_agents.engines import ScriptedEngine, by_run_id
    from structured_agents.engines.factory import register_engine

    class Slow(ScriptedEngine):
        calls = 0

        def generate(self, requests):
            print("generate", flush=True)
            Slow.calls += 1
            time.sleep(0.3)
            # SLOW_STALL (a file): the 4th batch waits until the test, having sent the Ctrl-C,
            # creates it, so the Ctrl-C lands mid-run even when a loaded machine reads late
            stall = os.environ.get("SLOW_STALL")
            deadline = time.monotonic() + 60
            while stall and Slow.calls == 4 and not os.path.exists(stall) and time.monotonic() < deadline:
                time.sleep(0.05)
            return super().generate(requests)

    def slow(_settings):
        return Slow(lambda _key: [write_docstring], key=by_run_id)

    register_engine("slow", slow)
    app()
    """
)


def _sa(script: Path, project: Path, db_url: str, *, stall: Path | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, "SA_ENGINE__NAME": "slow", **({"SLOW_STALL": str(stall)} if stall else {})}
    env.pop("SA_DATABASE_URL", None)
    command = [
        sys.executable,
        str(script),
        "run",
        "docstring",
        str(project),
        "--db",
        db_url,
        "--concurrency",
        "2",
    ]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def test_ctrl_c_requeues_running_jobs_and_the_same_command_resumes(
    tmp_path: Path, project: Path, db_url: str
) -> None:
    script = tmp_path / "slow_sa.py"
    script.write_text(SLOW_SA.format(helpers=str(HELPERS), tests=str(HELPERS.parent)))
    go = tmp_path / "go"
    process = _sa(script, project, db_url, stall=go)
    assert process.stdout is not None
    seen = 0
    while seen < 4:  # a few batches in: some jobs done, two in flight
        line = process.stdout.readline()
        assert line, "sa run ended before it was interrupted"
        seen += line.startswith("generate")
    process.send_signal(signal.SIGINT)
    go.touch()  # the stalled batch may end now
    output = process.communicate(timeout=60)[0]

    assert process.returncode == 130, output
    assert "interrupted" in output and "run the same command again to resume" in output.lower()
    with SqlStore(db_url) as store:
        [batch] = store.list_batches()
        statuses = [run.status for run in store.list_runs(batch.id)]
        assert batch.status == "queued"
        assert "running" not in statuses and 0 < statuses.count("succeeded") < len(statuses)
        assert len(store.results(batch.id)) == statuses.count("succeeded")

    resumed = _sa(script, project, db_url)
    output = resumed.communicate(timeout=120)[0]

    assert resumed.returncode == 0, output
    with SqlStore(db_url) as store:
        assert [b.id for b in store.list_batches()] == [batch.id]
        assert store.batch_counts(batch.id).by_status == {"succeeded": len(statuses)}
