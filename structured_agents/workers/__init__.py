"""Distributed runs: Celery workers that drive agent runs step by step, state in the database.

An agent run is a chain of steps, each a Celery task, each reading the run's state from the
database and writing it back in one transaction::

    control  sa.control.start_run(run)              claim the run, KernelStart, state turn 0
      llm    sa.llm.turn(run, epoch, turn)          fed to the engine as it arrives (continuous
                                                    batching), acknowledged once committed
      tools  sa.tools.call(run, epoch, turn, call)  one task per tool call (fan-out); the last
                                                    one recorded applies the turn and sends
                                                    the next model turn, or finishes the run
    control  sa.control.finish_run(run, epoch)      a run whose last turn made no tool call

The fan-in is a counter over the ``tool_calls`` rows (see :mod:`structured_agents.workers.tools`).

Every step is idempotent: it acts only when the stored state is where the step expects it
(phase, turn, epoch) and commits with a compare-and-set on the state's version, so a
redelivered or duplicated message changes nothing. Step deliveries are counted in
``step_attempts``; a step that keeps failing fails its run with its last error. The database
is the truth and messages are hints: the periodic ``sa.control.sweep`` sends again the step of
any run whose state stopped moving.
"""
