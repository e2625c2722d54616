"""The report's optional quality section: figures an evaluation computed for the batch.

The report does not evaluate anything itself; it shows what an evaluation (``sa eval``)
wrote, fed as a JSON file (``sa report BATCH --quality FILE``)::

    {
      "batch_id": "3f2a...",                      optional; when given it must be the report's batch
      "title": "Docstring quality",               optional
      "metrics": {
        "accepted_rate": 0.82,                    a number
        "mean_score": {"value": 3.9, "detail": "1-5, judged on 50 samples"}
      }
    }

Metrics keep the file's order. A malformed file raises :class:`QualityFileError` naming the
file and the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from structured_agents.errors import ConfigError

__all__ = ["QualityFileError", "QualityMetric", "QualityReport", "load_quality"]


class QualityFileError(ConfigError):
    """A quality file cannot be read or does not have the expected shape."""


@dataclass(frozen=True, slots=True)
class QualityMetric:
    """One figure of an evaluation."""

    name: str
    value: float
    detail: str = ""
    """How it was computed (scale, sample size), as the evaluation says."""


@dataclass(frozen=True, slots=True)
class QualityReport:
    """What an evaluation computed for one batch."""

    title: str
    source: str
    """Where the figures came from (a file path)."""
    metrics: tuple[QualityMetric, ...]
    batch_id: str | None = None
    """The batch the figures are about, when the evaluation says."""


class _Metric(BaseModel):
    model_config = ConfigDict(extra="forbid")

    value: float
    detail: str = ""


class _QualityFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    batch_id: str | None = None
    title: str = "Quality"
    metrics: dict[str, float | _Metric]


def _field(location: tuple[int | str, ...]) -> str:
    # pydantic reports which member of ``float | _Metric`` it tried; the file's path is what matters
    return ".".join(str(part) for part in location if part not in ("float", "_Metric")) or "(top level)"


def load_quality(path: Path, *, batch_id: str | None = None) -> QualityReport:
    """Read a quality file; with ``batch_id``, refuse a file about another batch."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise QualityFileError(f"quality file {path}: cannot read it: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise QualityFileError(f"quality file {path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from exc
    try:
        parsed = _QualityFile.model_validate(raw)
    except ValidationError as exc:
        deepest = max(exc.errors(), key=lambda error: len(error["loc"]))  # the union member that got furthest
        raise QualityFileError(f"quality file {path}: {_field(deepest['loc'])}: {deepest['msg']}") from exc
    if batch_id is not None and parsed.batch_id not in (None, batch_id):
        raise QualityFileError(f"quality file {path}: batch_id is {parsed.batch_id!r}, not {batch_id!r}")
    metrics = tuple(
        QualityMetric(name, metric.value, metric.detail)
        if isinstance(metric, _Metric)
        else QualityMetric(name, float(metric))
        for name, metric in parsed.metrics.items()
    )
    return QualityReport(parsed.title, str(path), metrics, parsed.batch_id)
