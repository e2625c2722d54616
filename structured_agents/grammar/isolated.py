"""Grammar compiles in child processes, each refused after a time budget.

XGrammar cannot stop a compile once it runs, and a compile's time is not read off the grammar's
size: a chain of rules with character classes took 1.4 s at 400 rules here and 149 s at 5,000
rules of another shape, while a 57 KB Qwen tool grammar took 0.3 s. So a server that compiles
what its clients send (``sa serve``) compiles in child processes and kills the one that runs
past the budget: the grammar is refused with a :class:`GrammarError`, a fresh child takes its
place, and no thread of the server is held.

Each child builds its compiler once from the parent's tokenizer info (serialized, so it loads no
model and no tokenizer), then compiles one grammar at a time: the parent sends the parsed
grammar as XGrammar's JSON and gets the compiled grammar back the same way. ``processes``
children serve at once; a compile waits for a free one (so one client's grammars can hold at
most that many for at most the budget each).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import queue
import threading
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import TYPE_CHECKING, Any

from structured_agents.errors import GrammarError
from structured_agents.grammar.messages import not_compiled

if TYPE_CHECKING:
    import xgrammar

__all__ = ["IsolatedCompiler"]

_START_S = 120.0
"""Longest a child may take to start (importing XGrammar and torch, building its compiler)."""


def _child(conn: Connection, tokenizer_json: str) -> None:  # pragma: no cover - runs in the child
    """Compile the grammars the parent sends until it sends None."""
    import xgrammar

    info = xgrammar.TokenizerInfo.deserialize_json(tokenizer_json)
    compiler = xgrammar.GrammarCompiler(info, cache_enabled=False, max_threads=1)
    conn.send(("ready", ""))
    while True:
        message = conn.recv()
        if message is None:
            return
        try:
            compiled = compiler.compile_grammar(xgrammar.Grammar.deserialize_json(message))
            conn.send(("ok", compiled.serialize_json()))
        except Exception as exc:
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


class _Child:
    """One child process and its end of the pipe."""

    def __init__(self, context: Any, tokenizer_json: str) -> None:
        """Start the child and wait until its compiler is built (it imports XGrammar: seconds),
        so no compile's budget pays for a child's start."""
        self.conn, child_end = multiprocessing.Pipe()
        self.process: BaseProcess = context.Process(
            target=_child, args=(child_end, tokenizer_json), name="grammar-compile", daemon=True
        )
        self.process.start()
        child_end.close()
        try:
            ready = self.conn.poll(_START_S) and self.conn.recv()[0] == "ready"
        except (EOFError, OSError):
            ready = False
        if not ready:
            self.stop()
            raise GrammarError(f"a grammar compiler process did not start within {_START_S:g} s")

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        self.conn.close()


class IsolatedCompiler:
    """Compiles parsed grammars in ``processes`` children, each within ``timeout_s``."""

    def __init__(
        self, tokenizer_info: xgrammar.TokenizerInfo, *, timeout_s: float, processes: int = 2
    ) -> None:
        if timeout_s <= 0:
            raise GrammarError(f"IsolatedCompiler.timeout_s must be > 0, got {timeout_s}")
        if processes < 1:
            raise GrammarError(f"IsolatedCompiler.processes must be >= 1, got {processes}")
        self.timeout_s = timeout_s
        self._info = tokenizer_info
        self._tokenizer_json = tokenizer_info.serialize_json()
        self._context = multiprocessing.get_context("spawn")  # never fork a process with torch threads
        self._idle: queue.Queue[_Child] = queue.Queue()
        self._children: set[_Child] = set()
        self._lock = threading.Lock()
        self._respawns: list[threading.Thread] = []
        self._closed = False
        for _ in range(processes):
            self._add()

    def _add(self) -> None:
        child = _Child(self._context, self._tokenizer_json)
        with self._lock:
            self._children.add(child)
        self._idle.put(child)

    def compile(self, grammar: xgrammar.Grammar) -> xgrammar.CompiledGrammar:
        """``grammar`` compiled, or a GrammarError when it does not compile or runs past the budget."""
        import xgrammar

        if self._closed:
            raise GrammarError("the grammar compiler is closed")
        try:
            child = self._idle.get(timeout=_START_S)
        except queue.Empty:
            raise GrammarError("no grammar compiler process is free; try again") from None
        try:
            child.conn.send(grammar.serialize_json())
            if not child.conn.poll(self.timeout_s):
                raise TimeoutError
            status, payload = child.conn.recv()
        except (TimeoutError, EOFError, OSError, BrokenPipeError) as exc:
            self._replace(child)
            if isinstance(exc, TimeoutError):
                raise GrammarError(
                    f"the grammar did not compile within {self.timeout_s:g} s; simplify it"
                ) from None
            raise GrammarError(f"the grammar compiler stopped ({type(exc).__name__})") from None
        self._idle.put(child)
        if status != "ok":
            raise not_compiled(payload)
        return xgrammar.CompiledGrammar.deserialize_json(payload, self._info)

    def _replace(self, child: _Child) -> None:
        """Kill ``child`` and start another in its place (off the caller's thread)."""
        with self._lock:
            self._children.discard(child)
        child.stop()
        if not self._closed:
            respawn = threading.Thread(target=self._add, name="grammar-compile-respawn", daemon=True)
            with self._lock:
                self._respawns.append(respawn)
            respawn.start()

    def close(self) -> None:
        """Stop every child (a replacement still starting first finishes starting)."""
        self._closed = True
        with self._lock:
            respawns = list(self._respawns)
        for respawn in respawns:
            respawn.join()
        with self._lock:
            children = list(self._children)
            self._children.clear()
        for child in children:
            with contextlib.suppress(OSError):
                child.conn.send(None)
            child.stop()
