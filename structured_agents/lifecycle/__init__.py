"""One run lifecycle under both drivers: the embedded runner (``sa run``) and the Celery steps.

:class:`RunLifecycle` holds the steps (start, model turn, tool calls, apply, finish, fail);
:mod:`.outcome` turns a finished run into a stored result; :mod:`.agents` holds the loaded
bundles the steps run with; :mod:`.batch` what happens to a batch as a whole (its jobs checked, created or
resumed with them, cancelled).
Neither driver imports the other: both drive these.
"""

from __future__ import annotations

from structured_agents.lifecycle.agents import AgentCache, BatchAgent, EventBuffer
from structured_agents.lifecycle.batch import (
    OpenedBatch,
    PreparedBatch,
    cancel_batch,
    check_inputs,
    open_batch,
    prepare_batch,
)
from structured_agents.lifecycle.outcome import outcome_of, store_outcome, turn_record
from structured_agents.lifecycle.steps import ModelTurn, NextStep, RunLifecycle, next_step, state_of

__all__ = [
    "AgentCache",
    "BatchAgent",
    "EventBuffer",
    "ModelTurn",
    "NextStep",
    "OpenedBatch",
    "PreparedBatch",
    "RunLifecycle",
    "cancel_batch",
    "check_inputs",
    "next_step",
    "open_batch",
    "outcome_of",
    "prepare_batch",
    "state_of",
    "store_outcome",
    "turn_record",
]
