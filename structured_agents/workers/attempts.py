"""Attempts and retries of the workers' steps: the Celery driver's own policy.

Each delivery of a step first counts itself in ``step_attempts`` (:func:`begin`). A step that
raises records its error and is sent again after an exponential backoff; on the attempt that
uses up ``SA_WORKERS__MAX_ATTEMPTS`` its run is failed with that error
(:meth:`~structured_agents.lifecycle.RunLifecycle.fail`). A step whose worker dies (killed,
out of memory, a crashing tool) never records an error, but its next delivery counts again,
so a poison step ends its run the same way. Lost connections
(:func:`~structured_agents.workers.errors.is_transient`) are retried without being written,
since the database may be what is gone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from structured_agents.errors import StructuredAgentsError
from structured_agents.store import StoredRun
from structured_agents.types import JsonDict
from structured_agents.workers.errors import StepFailedError, is_transient
from structured_agents.workers.runtime import Runtime, runtime

__all__ = ["begin", "begin_many", "on_failure", "run_step", "step_key"]

logger = logging.getLogger(__name__)

WORKER_LOST = "its worker was lost every time (killed, out of memory or over the time limit)"


def step_key(epoch: int, *parts: object) -> str:
    """The name of a step in ``step_attempts``: ``e<epoch>:<kind>:<turn>[:<call id>]``."""
    return ":".join([f"e{epoch}", *(str(part) for part in parts)])


def _named(key: str, what: str) -> str:
    return f"{key} ({what})" if what else key


def begin(rt: Runtime, run: StoredRun, key: str, what: str = "") -> int | None:
    """Count a delivery of step ``key``: its attempt number, or None (run failed) past the budget.
    ``what`` names what the step runs (``tool NAME``) in the run's error."""
    return begin_many(rt, [(run, key)], what).get((run.id, key))


def begin_many(
    rt: Runtime, steps: Sequence[tuple[StoredRun, str]], what: str = ""
) -> dict[tuple[str, str], int]:
    """:func:`begin` for many ``(run, step key)`` with one write: the attempt number of each
    step still within the budget, by ``(run id, key)`` (the runs of the others are failed)."""
    attempts = rt.store.begin_steps((run.id, key) for run, key in steps)
    within: dict[tuple[str, str], int] = {}
    for run, key in steps:
        attempt = attempts[run.id, key]
        if attempt <= rt.settings.workers.max_attempts:
            within[run.id, key] = attempt
            continue
        last = rt.store.step_error(run.id, key) or WORKER_LOST
        step = _named(key, what)
        rt.lifecycle.fail(
            run, StepFailedError(f"step {step} was begun {attempt - 1} times without finishing; {last}")
        )
    return within


def on_failure(
    rt: Runtime,
    run: StoredRun,
    key: str,
    attempt: int,
    error: BaseException,
    what: str = "",
    *,
    events: Sequence[JsonDict] = (),
) -> float | None:
    """Record that attempt ``attempt`` of step ``key`` failed: the delay before the next one, or
    None when that was the last attempt of the budget and the run was failed (its error names
    ``what`` the step runs, when given; ``events``, what the failed step emitted, go in its log
    before the end, as the embedded runner records them)."""
    text = f"{type(error).__name__}: {error}"
    logger.warning("run %s step %s attempt %d failed: %s", run.id, key, attempt, text)
    if is_transient(error):
        return rt.backoff(attempt)
    rt.store.fail_step(run.id, key, text)
    if attempt >= rt.settings.workers.max_attempts:
        step = _named(key, what)
        failed = StepFailedError(f"step {step} failed {attempt} times; last error: {text}")
        rt.lifecycle.fail(run, failed, events=events)
        return None
    return rt.backoff(attempt)


def run_step(
    task: Any,
    run_id: str,
    epoch: int,
    parts: tuple[object, ...],
    body: Callable[[StoredRun], None],
    describe: Callable[[StoredRun], str] | None = None,
) -> None:
    """Run one step of a single-message task: load, check, count, act, and retry or fail.

    The step acts only when the run is running and its stored state belongs to ``epoch``;
    otherwise the message is a leftover and is dropped. A lost database connection before the
    step is counted retries the message (up to the budget, with backoff); a failure of
    ``body`` goes through :func:`on_failure`. ``describe`` names what the step runs (the tool
    of a tool call) for the error of a run the step fails.
    """
    rt = runtime()
    key = step_key(epoch, *parts)
    try:
        run = rt.store.load_runs([run_id]).get(run_id)
        if run is None or run.status != "running" or run.state is None or run.epoch != epoch:
            return
        what = describe(run) if describe is not None else ""
        attempt = begin(rt, run, key, what)
    except StructuredAgentsError as exc:
        if not is_transient(exc):
            raise
        budget = rt.settings.workers.max_attempts
        raise task.retry(exc=exc, countdown=rt.backoff(task.request.retries + 1), max_retries=budget) from exc
    if attempt is None:
        return
    try:
        body(run)
    except Exception as exc:
        delay = on_failure(rt, run, key, attempt, exc, what)
        if delay is not None:
            raise task.retry(exc=exc, countdown=delay, max_retries=None) from exc
