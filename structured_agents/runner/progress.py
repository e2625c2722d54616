"""A Rich progress bar for embedded runs: jobs done and failed, tokens per second, ETA.

:class:`RunProgress` is also an observer: it counts the tokens of every model response, so the
bar shows the engine's real throughput while jobs are still running.
"""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from structured_agents.observer.events import Event, ModelResponse

__all__ = ["RunProgress"]


class _Counts(ProgressColumn):
    """``N failed · T tok/s`` from the task's fields."""

    def render(self, task: Task) -> Text:
        failed = int(task.fields.get("failed", 0))
        rate = float(task.fields.get("tokens_per_s", 0.0))
        text = Text()
        text.append(f"{failed} failed", style="red" if failed else "dim")
        text.append(f" · {rate:,.1f} tok/s", style="cyan")
        return text


class RunProgress:
    """Progress of one embedded run; use as a context manager around the run."""

    def __init__(self, console: Console | None = None, *, description: str = "jobs") -> None:
        self.console = console or Console(stderr=True)
        self.description = description
        self.succeeded = 0
        """Jobs that succeeded so far."""
        self.failed = 0
        """Jobs that failed so far."""
        self.completion_tokens = 0
        """Tokens generated so far."""
        self._started = time.monotonic()
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            _Counts(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
        )
        self._task: TaskID | None = None

    def __enter__(self) -> RunProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def start(self, total: int) -> None:
        """Show a bar for ``total`` jobs (restarts the clock)."""
        self._started = time.monotonic()
        self._task = self._progress.add_task(self.description, total=total, failed=0, tokens_per_s=0.0)

    def job_done(self, succeeded: bool) -> None:
        """Count one finished job."""
        if succeeded:
            self.succeeded += 1
        else:
            self.failed += 1
        self._refresh(advance=1)

    @property
    def tokens_per_s(self) -> float:
        """Generated tokens per second since :meth:`start`."""
        elapsed = time.monotonic() - self._started
        return self.completion_tokens / elapsed if elapsed > 0 else 0.0

    async def on_event(self, event: Event) -> None:
        """Count the tokens of each model response."""
        if isinstance(event, ModelResponse):
            self.completion_tokens += event.usage.completion_tokens
            self._refresh(advance=0)

    def _refresh(self, advance: int) -> None:
        if self._task is not None:
            self._progress.update(
                self._task, advance=advance, failed=self.failed, tokens_per_s=self.tokens_per_s
            )
