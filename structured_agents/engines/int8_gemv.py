"""The int8 product of a CPU decode step, as a small C kernel built on the machine that runs it.

torch's ``_weight_int8pack_mm`` takes a decode step's int8 products (:mod:`.int8_weights`) at
about 12 GB/s of weight on this project's 2-core AVX-512 CPU, half of what the machine reads. At
batch 1 those products are the largest part of a step after the LM head. ``int8_gemv.c``, beside
this module, reads the weight at the memory's speed: it widens two output rows' int8 weights to
float32 once for all of a step's rows, keeps their sums in registers and prefetches the weight
ahead. Its threads are torch's own OpenMP pool (the C file is linked against ``libgomp.so.1``,
which torch has loaded): a kernel with a pool of its own (numba's) spun against torch's between
operations and lost its gain.

Measured here, the 18 decoder layers' products of Gemma 3 270M (100 MB of int8, 72 calls),
milliseconds, torch's kernel against this one (``benchmarks/bench_engine.py`` gives whole
steps): 8.4-8.8 / 3.7-3.9 at 1 row, 9.5-9.8 / 4.9 at 2, 11.8-12.3 / 6.6 at 4, 23-24 / 11.2 at 8.

Its activations are float32, where torch's kernel takes bfloat16: a float32 model's products are
closer to its own weights' than before, so greedy text can differ from the bfloat16 activations'
where two tokens are close (measured in the change's note).

:func:`native` compiles the kernel once per machine into the cache (``native/`` under
:func:`~structured_agents.paths.cache_dir`, keyed by the source, the compiler and the CPU's
flags, written atomically) with the machine's C compiler (``CC``, else ``cc``), in about half a
second, and loads it. Where there is none, the CPU lacks AVX-512, or torch's threads are not
OpenMP's, it gives None, says why once in the log, and decode steps take torch's kernel.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import logging
import os
import platform
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import torch

from structured_agents.paths import cache_dir

__all__ = ["INT4_GROUP", "INT4_WIDTH", "SOURCE", "Native", "cpu_has", "native"]

SOURCE = Path(__file__).with_name("int8_gemv.c")
INT4_GROUP = 64
"""Values per scale of the LM head's 4-bit estimate (:meth:`Native.int4_pack`)."""
INT4_WIDTH = 8192
"""The widest input the 4-bit estimate takes (``int8_gemv.c`` quantizes a step's rows into a
buffer of this size)."""
_FLAGS = ("-O3", "-march=native", "-fopenmp", "-shared", "-fPIC")
logger = logging.getLogger(__name__)


class Native:
    """The loaded kernel: :meth:`product` of at most :attr:`max_rows` rows."""

    def __init__(self, path: Path) -> None:
        library = ctypes.CDLL(str(path))
        pointer, size, count = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
        product = [pointer, size, size, pointer, pointer, pointer, size, count]
        self._gemv = _bound(library.sa_int8_gemv, product)
        self._int4 = _bound(library.sa_int4_gemv, product)
        self._pack = _bound(library.sa_int4_pack, [pointer, pointer, size, size, pointer, pointer, count])
        self.max_rows: int = library.sa_int8_gemv_max_rows()
        self.path = path

    def product(self, x: torch.Tensor, values: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
        """``x`` (``[rows, in]``, at most :attr:`max_rows` rows, float32 or bfloat16) by ``values``
        (``[out, in]`` int8, ``in`` a multiple of 16) with ``scales`` (``[out]`` bfloat16), in
        ``x``'s dtype; the sums are float32's."""
        rows, width = x.shape
        if values.dtype != torch.int8 or scales.dtype != torch.bfloat16 or values.shape[1] != width:
            raise ValueError(
                f"int8_gemv: {tuple(x.shape)} by {values.dtype} {tuple(values.shape)} with "
                f"{scales.dtype} scales"
            )
        out = _multiplied(self._gemv, x, values.contiguous(), scales.contiguous())
        if out is None:
            raise ValueError(f"int8_gemv: {rows} rows of {width} (at most {self.max_rows}, a multiple of 16)")
        return out if x.dtype == torch.float32 else out.to(x.dtype)

    def int4_pack(self, values: torch.Tensor, scales: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """An int8 copy (``[out, in]`` values, ``in`` a multiple of :data:`INT4_GROUP`, with one
        bfloat16 scale per row) as 4-bit groups for :meth:`int4_product`: the packed values
        (``[out, in / 2]`` uint8) and a float32 scale per group (``[out, in / 64]``)."""
        rows, width = values.shape
        if values.dtype != torch.int8 or scales.dtype != torch.bfloat16 or width % INT4_GROUP:
            raise ValueError(f"int4_pack: {values.dtype} {tuple(values.shape)} with {scales.dtype} scales")
        values, scales = values.contiguous(), scales.contiguous()
        packed = torch.empty((rows, width // 2), dtype=torch.uint8)
        group_scales = torch.empty((rows, width // INT4_GROUP), dtype=torch.float32)
        threads = torch.get_num_threads()
        pointers = (values.data_ptr(), scales.data_ptr())
        self._pack(*pointers, rows, width, packed.data_ptr(), group_scales.data_ptr(), threads)
        return packed, group_scales

    def int4_product(self, x: torch.Tensor, packed: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
        """``x`` (``[rows, in]``, at most :attr:`max_rows` rows) by the 4-bit groups of
        :meth:`int4_pack`, float32 ``[rows, out]``; ``x`` is quantized per row to int8 first,
        so a row's result does not depend on the rows beside it."""
        rows, width = x.shape
        if packed.shape[1] * 2 != width or scales.shape != (packed.shape[0], width // INT4_GROUP):
            raise ValueError(f"int4_product: {tuple(x.shape)} by {tuple(packed.shape)} packed")
        out = _multiplied(self._int4, x, packed, scales)
        if out is None:
            raise ValueError(
                f"int4_product: {rows} rows of {width} (at most {self.max_rows} rows of at most "
                f"{INT4_WIDTH}, a multiple of {INT4_GROUP})"
            )
        return out


def _bound(function: Any, argtypes: list[Any]) -> Any:
    """``function`` of the library, taking ``argtypes`` and returning a C ``int`` status."""
    function.restype = ctypes.c_int
    function.argtypes = argtypes
    return function


def _multiplied(
    function: Any, x: torch.Tensor, weight: torch.Tensor, scales: torch.Tensor
) -> torch.Tensor | None:
    """``function`` (``sa_int8_gemv`` or ``sa_int4_gemv``) of ``x`` by ``weight`` with
    ``scales``, float32 ``[rows, out]``; None where the kernel refused the sizes."""
    floats = x.to(torch.float32).contiguous()
    rows, width = floats.shape
    out = torch.empty((rows, weight.shape[0]), dtype=torch.float32)
    pointers = (weight.data_ptr(), scales.data_ptr(), out.data_ptr())
    status = function(floats.data_ptr(), rows, width, *pointers, weight.shape[0], torch.get_num_threads())
    return out if status == 0 else None


@functools.cache
def native() -> Native | None:
    """The kernel, built on the first call in a process where no earlier process built it; None
    where it cannot be built or used here (the reason is logged)."""
    flags = _cpu_flags()
    reason = _unusable(flags)
    if reason is None:
        compiler = shutil.which(os.environ.get("CC") or "cc")
        if compiler is None:
            reason = "no C compiler (cc, or CC)"
        else:
            try:
                return Native(_built(compiler, flags))
            except (OSError, subprocess.SubprocessError, AttributeError) as exc:
                reason = str(exc).strip() or type(exc).__name__
    logger.info("int8 decode steps take torch's kernel: %s", reason)
    return None


def _unusable(flags: str) -> str | None:
    """Why this machine cannot take the kernel, or None."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return f"built for Linux on x86-64, not {platform.system()} on {platform.machine()}"
    if "avx512f" not in flags.split():
        return "the CPU has no AVX-512"
    if "OpenMP" not in torch.__config__.parallel_info():
        return "torch's threads are not OpenMP's"
    return None


def cpu_has(*flags: str) -> bool:
    """Whether this CPU has any of ``flags`` (``/proc/cpuinfo``'s names, ``avx512_vnni``)."""
    return bool(set(flags) & set(_cpu_flags().split()))


def _cpu_flags() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return ""


def _built(compiler: str, flags: str) -> Path:
    """The shared library, compiled into the cache unless an earlier call put it there."""
    version = subprocess.run(
        [compiler, "--version"], capture_output=True, text=True, timeout=30, check=False
    ).stdout
    key = hashlib.sha256(
        b"\0".join(part.encode() for part in (SOURCE.read_text(), compiler, version, " ".join(_FLAGS), flags))
    ).hexdigest()[:16]
    path = cache_dir() / "native" / f"int8_gemv-{key}.so"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    try:
        built = subprocess.run(
            [compiler, *_FLAGS, str(SOURCE), "-o", str(partial)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if built.returncode != 0:
            message = built.stderr.strip() or f"exit status {built.returncode}"
            raise OSError(f"{compiler} could not build {SOURCE.name}: {message}")
        os.replace(partial, path)  # atomic: a process beside this one loads a whole file or builds its own
    finally:
        partial.unlink(missing_ok=True)
    for stale in path.parent.glob("int8_gemv-*.so"):  # an older source's, or another compiler's
        if stale != path:
            stale.unlink(missing_ok=True)  # a process that loaded it keeps its mapping
    logger.info("built the int8 decode kernel %s", path)
    return path
