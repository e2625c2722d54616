"""Snapshot the parts of vLLM's API this project relies on, read from a vLLM wheel without importing it.

Grammar artifacts render ``{"structured_outputs": {...}}`` payloads that vLLM reads as
``StructuredOutputsParams(**payload["structured_outputs"])``, and ``engines/vllm_engine.py``
builds ``LLM``/``EngineArgs`` and ``SamplingParams`` keyword arguments and reads
``RequestOutput``/``CompletionOutput`` attributes. vLLM cannot be installed next to the CPU stack
(it needs a GPU, pins its own torch, and the wheel is over 300 MB), so
``tests/grammar/test_vllm_payload.py`` and ``tests/engines/test_vllm_engine.py`` check those
names against this snapshot instead.

CI does not download vLLM: the snapshot is committed, and this script is run by hand when the
supported vLLM version changes::

    pip download vllm --no-deps -d /tmp/vllm_wheel
    python scripts/snapshot_vllm.py /tmp/vllm_wheel/vllm-*.whl

(``--download`` runs that ``pip download`` itself.) The wheel is opened with ``zipfile`` and its
sources parsed with ``ast``; the output, ``tests/data/vllm_api.json``, holds the vLLM version
(from the wheel's METADATA) and, per class, the source file and the public init fields in
declaration order (for ``RequestOutput`` and ``LLM``, which define ``__init__`` themselves: its
parameters). ``StructuredOutputsParams`` also gets its fields' annotations and the constraint
fields its ``__post_init__`` counts (vLLM requires exactly one of them to be set).
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import zipfile
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "vllm_api.json"

SAMPLING = "vllm/sampling_params.py"
OUTPUTS = "vllm/outputs.py"
LLM = "vllm/entrypoints/llm.py"
ENGINE_ARGS = "vllm/engine/arg_utils.py"
LLM_ENGINE = "vllm/v1/engine/llm_engine.py"
LOGPROBS = "vllm/logprobs.py"

# Snapshot key -> (source file, class); a key "Class.method" records the parameters of that
# method (``.__init__``: the class's own ``__init__``) rather than its annotated fields; an
# enum records its member names; "LLM.attributes" the ``self.X`` that ``LLM.__init__`` sets.
CLASSES: dict[str, tuple[str, str]] = {
    "SamplingParams": (SAMPLING, "SamplingParams"),
    "StructuredOutputsParams": (SAMPLING, "StructuredOutputsParams"),
    "CompletionOutput": (OUTPUTS, "CompletionOutput"),
    "RequestOutput.__init__": (OUTPUTS, "RequestOutput"),
    "LLM.__init__": (LLM, "LLM"),
    "EngineArgs": (ENGINE_ARGS, "EngineArgs"),
    "LLM.attributes": (LLM, "LLM"),
    "LLMEngine.add_request": (LLM_ENGINE, "LLMEngine"),
    "LLMEngine.step": (LLM_ENGINE, "LLMEngine"),
    "LLMEngine.abort_request": (LLM_ENGINE, "LLMEngine"),
    "RequestOutputKind": (SAMPLING, "RequestOutputKind"),
    "Logprob": (LOGPROBS, "Logprob"),
}


def _find_class(tree: ast.Module, name: str, source: str) -> ast.ClassDef:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise SystemExit(f"class {name} not found in {source}")


def _is_init_false(value: ast.expr | None) -> bool:
    """Whether a field's default is ``field(..., init=False)``."""
    if not isinstance(value, ast.Call) or ast.unparse(value.func) not in ("field", "dataclasses.field"):
        return False
    return any(
        kw.arg == "init" and isinstance(kw.value, ast.Constant) and kw.value.value is False
        for kw in value.keywords
    )


def init_fields(cls: ast.ClassDef) -> dict[str, str]:
    """The public fields ``__init__`` takes, in order, with their annotations as written.

    Skips ``ClassVar``s, ``field(init=False)`` and private (``_``-prefixed) fields, which are
    vLLM internals this project must not pass.
    """
    fields: dict[str, str] = {}
    for node in cls.body:
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            continue
        annotation = ast.unparse(node.annotation)
        if node.target.id.startswith("_") or "ClassVar" in annotation or _is_init_false(node.value):
            continue
        fields[node.target.id] = annotation
    return fields


def init_params(cls: ast.ClassDef, method: str = "__init__") -> list[str]:
    """The parameters of the class's own ``method`` that can be passed by name, in order."""
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == method:
            return [a.arg for a in [*node.args.args, *node.args.kwonlyargs] if a.arg != "self"]
    raise SystemExit(f"{cls.name}.{method} not found")


def enum_members(cls: ast.ClassDef) -> list[str]:
    """The member names of an ``Enum`` class, in order."""
    return [
        t.id
        for node in cls.body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    ]


SELF = "self"


def init_attributes(cls: ast.ClassDef) -> list[str]:
    """The ``self.X`` attributes the class's ``__init__`` assigns, in order."""
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            found: list[str] = []
            for sub in ast.walk(node):
                targets = sub.targets if isinstance(sub, ast.Assign) else []
                own = [
                    t.attr for t in targets if isinstance(t, ast.Attribute) and ast.unparse(t.value) == "self"
                ]
                found += [name for name in own if name not in found]
            return found
    raise SystemExit(f"{cls.name}.__init__ not found")


def constraint_fields(cls: ast.ClassDef) -> list[str]:
    """Fields ``__post_init__`` counts as constraints (``self.X is not None`` terms), in order."""
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__post_init__":
            found: list[str] = []
            for sub in ast.walk(node):
                if (
                    isinstance(sub, ast.Compare)
                    and isinstance(sub.left, ast.Attribute)
                    and isinstance(sub.left.value, ast.Name)
                    and sub.left.value.id == "self"
                    and len(sub.ops) == 1
                    and isinstance(sub.ops[0], ast.IsNot)
                    and sub.left.attr not in found
                ):
                    found.append(sub.left.attr)
            return found
    raise SystemExit(f"{cls.name}.__post_init__ not found")


def snapshot(wheel: Path) -> dict[str, object]:
    """The snapshot of every class in :data:`CLASSES`, read from ``wheel``."""
    with zipfile.ZipFile(wheel) as zf:
        metadata = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        version = next(
            line.split(":", 1)[1].strip()
            for line in zf.read(metadata).decode().splitlines()
            if line.startswith("Version:")
        )
        trees = {source: ast.parse(zf.read(source).decode()) for source, _ in CLASSES.values()}
    data: dict[str, object] = {"vllm_version": version, "wheel": wheel.name}
    for key, (source, name) in CLASSES.items():
        cls = _find_class(trees[source], name, source)
        entry: dict[str, object] = {"source": f"{source}:{name}"}
        member = key.partition(".")[2]
        if member == "attributes":
            entry["fields"] = init_attributes(cls)
        elif member:
            entry["fields"] = init_params(cls, member)
        elif any(ast.unparse(base) == "Enum" for base in cls.bases):
            entry["fields"] = enum_members(cls)
        else:
            fields = init_fields(cls)
            entry["fields"] = list(fields)
            if name == "StructuredOutputsParams":
                entry["field_types"] = fields
                entry["constraint_fields"] = constraint_fields(cls)
        data[key] = entry
    return data


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument(
        "wheel", nargs="?", type=Path, help="a vllm-*.whl (default: the last one in --dir by name)"
    )
    parser.add_argument(
        "--dir", type=Path, default=Path("/tmp/vllm_wheel"), help="where wheels are looked for"
    )
    parser.add_argument(
        "--download", action="store_true", help="pip download vllm --no-deps into --dir first"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if args.download:
        cmd = [sys.executable, "-m", "pip", "download", "vllm", "--no-deps", "-d", str(args.dir)]
        subprocess.run(cmd, check=True)
    wheel: Path | None = args.wheel
    if wheel is None:
        wheels = sorted(args.dir.glob("vllm-*.whl"))
        if not wheels:
            raise SystemExit(f"no vllm wheel in {args.dir}; run with --download or pass a wheel path")
        wheel = wheels[-1]
    data = snapshot(wheel)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {args.out}: vLLM {data['vllm_version']}, classes {', '.join(CLASSES)}")


if __name__ == "__main__":
    main()
