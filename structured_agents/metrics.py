"""Prometheus metrics: what ``sa serve`` and the API expose at ``/metrics``.

Names follow the exporters a team already scrapes where one fits: vLLM's for ``sa serve``
(``vllm:num_requests_running``, ``vllm:prompt_tokens_total``, ``vllm:generation_tokens_total``,
``vllm:e2e_request_latency_seconds``, ``vllm:time_to_first_token_seconds``), the
celery-exporter's for queues (``celery_queue_length{queue_name}``), and ``sa_`` for the rest.
Each service has a registry of its own (never prometheus-client's global one), so two apps in
one process (the tests) count apart.

What the engine and the store already count is read when scraped, not on the hot path:
:class:`EngineCollector` reads a local engine's :class:`~structured_agents.engines.decode_stats.DecodeStats`
and its grammar cache (decode steps, rows per step, seconds per phase, compiles and cache hits);
:class:`StoreCollector` counts runs and batches by status and the queues' waiting messages.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["CONTENT_TYPE", "EngineCollector", "ServeMetrics", "StoreCollector", "TurnMetrics", "scrape"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The Prometheus text format's media type."""

_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320)

log = logging.getLogger(__name__)


def scrape(registry: CollectorRegistry) -> bytes:
    """The registry's metrics in the Prometheus text format."""
    return generate_latest(registry)


class EngineCollector(Collector):
    """A local engine's counters (``stats``: DecodeStats; ``grammar_cache``: hits and misses),
    read at scrape time; an engine without them adds nothing."""

    def __init__(self, engine: object) -> None:
        self._engine = engine

    def collect(self) -> Iterator[Any]:
        stats = getattr(self._engine, "stats", None)
        if stats is not None:
            yield CounterMetricFamily(
                "sa_engine_decode_steps", "Decode steps (one token per live row).", stats.steps
            )
            yield CounterMetricFamily(
                "sa_engine_row_steps", "Rows decoded, summed over the steps.", stats.row_steps
            )
            yield GaugeMetricFamily(
                "sa_engine_batch_occupancy", "Mean rows per decode step.", stats.mean_batch
            )
            seconds = CounterMetricFamily(
                "sa_engine_seconds", "Seconds the engine spent, by phase.", labels=["phase"]
            )
            for phase in ("compile", "prefill", "decode", "select", "accept", "review"):
                seconds.add_metric([phase], getattr(stats, f"{phase}_s"))
            yield seconds
            yield CounterMetricFamily(
                "sa_grammar_compile_seconds", "Seconds spent compiling grammars.", stats.compile_s
            )
        cache = getattr(self._engine, "grammar_cache", None)
        if cache is not None:
            yield CounterMetricFamily("sa_grammar_cache_hits", "Grammars found compiled.", cache.hits)
            yield CounterMetricFamily("sa_grammar_cache_misses", "Grammars compiled.", cache.misses)
        live = getattr(self._engine, "live_rows", None)
        if isinstance(live, int):
            yield GaugeMetricFamily("sa_engine_live_rows", "Rows in the engine's batch now.", live)


class StoreCollector(Collector):
    """Runs and batches by status (``counts()``) and each queue's waiting messages
    (``queues()``), read at scrape time; a source that fails is left out (and logged)."""

    def __init__(
        self,
        counts: Callable[[], tuple[Mapping[str, int], Mapping[str, int]]],
        queues: Callable[[], Mapping[str, int]],
    ) -> None:
        self._counts = counts
        self._queues = queues

    def collect(self) -> Iterator[Any]:
        try:
            runs, batches = self._counts()
        except Exception as exc:  # the database is down: the scrape still answers
            log.warning("metrics: no run counts: %s", exc)
        else:
            run_family = GaugeMetricFamily("sa_runs", "Runs by status.", labels=["status"])
            for status, count in sorted(runs.items()):
                run_family.add_metric([status], count)
            yield run_family
            batch_family = GaugeMetricFamily("sa_batches", "Batches by status.", labels=["status"])
            for status, count in sorted(batches.items()):
                batch_family.add_metric([status], count)
            yield batch_family
        try:
            queues = self._queues()
        except Exception as exc:  # the broker is down
            log.warning("metrics: no queue lengths: %s", exc)
            yield GaugeMetricFamily("sa_broker_up", "Whether the broker answered the scrape.", 0)
        else:
            yield GaugeMetricFamily("sa_broker_up", "Whether the broker answered the scrape.", 1)
            family = GaugeMetricFamily(
                "celery_queue_length", "Messages waiting in each queue.", labels=["queue_name"]
            )
            for name, length in sorted(queues.items()):
                family.add_metric([name], length)
            yield family


class TurnMetrics:
    """The llm worker's metrics: model turns committed or failed, their tokens and seconds,
    with its engine's counters, served by prometheus-client's own HTTP server."""

    def __init__(self, engine: object) -> None:
        self.registry = CollectorRegistry()
        registry = self.registry
        self.turns = Counter("sa_turns", "Model turns, by outcome.", ["outcome"], registry=registry)
        self.prompt_tokens = Counter(
            "sa_prompt_tokens", "Prompt tokens of committed turns.", registry=registry
        )
        self.generation_tokens = Counter(
            "sa_generation_tokens", "Generated tokens of committed turns.", registry=registry
        )
        self.seconds = Histogram(
            "sa_turn_seconds",
            "Seconds from a turn's start to its commit.",
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        registry.register(EngineCollector(engine))

    def serve(self, port: int, host: str) -> bool:
        """Serve ``/metrics`` on ``host:port`` from a daemon thread; False (and a logged error)
        when the port cannot be bound, such as by a second worker on the host: metrics never
        keep a worker from serving."""
        try:
            start_http_server(port, addr=host, registry=self.registry)
        except OSError as exc:
            log.error("metrics: cannot serve on %s:%d (%s); this worker serves none", host, port, exc)
            return False
        return True


class ServeMetrics:
    """The metrics of ``sa serve`` (vLLM's names), with its engine's counters."""

    def __init__(self, engine: object) -> None:
        self.registry = CollectorRegistry()
        registry = self.registry
        self.running = Gauge("vllm:num_requests_running", "Choices being decoded.", registry=registry)
        self.prompt_tokens = Counter(
            "vllm:prompt_tokens", "Prompt tokens of finished choices.", registry=registry
        )
        self.generation_tokens = Counter(
            "vllm:generation_tokens", "Generated tokens of finished choices.", registry=registry
        )
        self.requests = Counter(
            "vllm:request_success",
            "Finished choices, by finish reason.",
            ["finished_reason"],
            registry=registry,
        )
        self.latency = Histogram(
            "vllm:e2e_request_latency_seconds",
            "Seconds from a choice's submission to its end.",
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.first_token = Histogram(
            "vllm:time_to_first_token_seconds",
            "Seconds from a request's arrival to its first token (streams).",
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        registry.register(EngineCollector(engine))
