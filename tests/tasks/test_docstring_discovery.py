"""Docstring targets: qualified names, what is left out, segments, and stable job ids."""

from __future__ import annotations

import ast
from pathlib import Path

from structured_agents.jobs import JobSpec, job_id, source_hash
from structured_agents.tasks.docstring import DOCSTRING_KIND, discover_docstring_jobs, find_docstring_targets

UNDOCUMENTED = {
    "geometry/draft_final.py": ["final_draft"],
    "geometry/schema.generated.py": ["schema"],
    "geometry/shapes.py": [
        "Shape.area",
        "Circle",
        "Circle.__init__",
        "Circle.radius",
        "Circle.area",
        "Rectangle.__init__",
        "Rectangle.area",
        "Rectangle.Corner",
        "Rectangle.Corner.__init__",
        "Rectangle.corners",
        "Rectangle.corners.<locals>.corner",
        "scale",
    ],
    "utils.py": [
        "slugify",
        "fibonacci",
        "gather_all",
        "gather_all.<locals>.wait",
        "_normalise",
    ],
}


def by_path(jobs: list[JobSpec]) -> dict[str, list[str]]:
    """Qualified names of the jobs per file, in discovery order."""
    out: dict[str, list[str]] = {}
    for job in jobs:
        out.setdefault(job.path, []).append(job.qualname)
    return out


def test_finds_every_undocumented_definition(sample_project: Path) -> None:
    jobs = discover_docstring_jobs(sample_project)
    assert by_path(jobs) == UNDOCUMENTED
    assert {job.kind for job in jobs} == {DOCSTRING_KIND}
    kinds = {job.qualname: job.inputs["target_kind"] for job in jobs if job.path == "geometry/shapes.py"}
    assert kinds["Circle"] == "class" and kinds["Circle.area"] == "method"
    assert kinds["Rectangle.corners.<locals>.corner"] == "function" and kinds["scale"] == "function"


def test_overwrite_includes_documented_and_private_can_be_left_out(sample_project: Path) -> None:
    everything = by_path(discover_docstring_jobs(sample_project, include_documented=True))
    assert (
        "Shape" in everything["geometry/shapes.py"] and "Shape.describe" in everything["geometry/shapes.py"]
    )
    assert "clamp" in everything["utils.py"]
    assert "lint_me.py" in everything and "geometry/__init__.py" not in everything
    public = by_path(discover_docstring_jobs(sample_project, include_private=False))
    assert "_normalise" not in public["utils.py"] and "Circle.__init__" in public["geometry/shapes.py"]


def test_segments_are_exact_and_hash_is_the_files(sample_project: Path) -> None:
    jobs = {job.qualname: job for job in discover_docstring_jobs(sample_project)}
    shapes = (sample_project / "geometry/shapes.py").read_text()
    radius = jobs["Circle.radius"]
    assert (
        radius.inputs["source"]
        == "    @property\n    def radius(self) -> float:\n        return self._radius\n"
    )
    assert (radius.inputs["start_line"], radius.inputs["def_line"], radius.inputs["end_line"]) == (24, 25, 26)
    assert radius.source_hash == source_hash(shapes.encode())
    fib = jobs["fibonacci"]
    assert fib.inputs["source"].startswith("@functools.lru_cache(maxsize=None)\ndef fibonacci")
    assert fib.inputs["docstring"] is None and fib.inputs["path"] == "utils.py"
    one_liner = jobs["_normalise"].inputs["source"]
    assert one_liner == "def _normalise(text: str) -> str: return text.strip().lower()\n"
    assert JobSpec.from_dict(fib.to_dict()) == fib


def test_ids_are_stable_and_follow_the_source(sample_project: Path) -> None:
    first = {job.qualname: job.job_id for job in discover_docstring_jobs(sample_project)}
    assert first == {job.qualname: job.job_id for job in discover_docstring_jobs(sample_project)}
    utils = sample_project / "utils.py"
    utils.write_text(utils.read_text().replace('"-".join', '"_".join'))
    second = {job.qualname: job.job_id for job in discover_docstring_jobs(sample_project)}
    assert second["slugify"] != first["slugify"]
    assert {name: i for name, i in second.items() if name != "slugify"} == {
        name: i for name, i in first.items() if name != "slugify"
    }
    expected = job_id(
        DOCSTRING_KIND,
        "utils.py",
        "slugify",
        'def slugify(text: str) -> str:\n    return "_".join(text.lower().split())\n',
    )
    assert second["slugify"] == expected
    assert job_id("lint", "utils.py", "slugify", "x") != job_id(DOCSTRING_KIND, "utils.py", "slugify", "x")


def test_ids_do_not_depend_on_where_the_codebase_lives(sample_project: Path, tmp_path: Path) -> None:
    before = [job.job_id for job in discover_docstring_jobs(sample_project)]
    moved = sample_project.rename(tmp_path / "elsewhere")
    assert [job.job_id for job in discover_docstring_jobs(moved)] == before
    assert len(set(before)) == sum(map(len, UNDOCUMENTED.values()))


def test_definitions_in_blocks_crlf_and_unparsable_files(tmp_path: Path) -> None:
    source = (
        "try:\r\n    import fast\r\nexcept ImportError:\r\n    def fast():\r\n        pass\r\n"
        "if True:\r\n    class Flag:\r\n        def on(self):\r\n            pass\r\n"
    )
    targets = find_docstring_targets(source)
    assert [(t.qualname, t.def_line) for t in targets] == [("fast", 4), ("Flag", 7), ("Flag.on", 8)]
    assert targets[2].segment == "        def on(self):\r\n            pass\r\n"
    (tmp_path / "broken.py").write_text("def broken(:\n")
    (tmp_path / "latin1.py").write_bytes(b"def f():\n    return '\xe9'\n")
    (tmp_path / "fine.py").write_text("def fine():\n    pass\n")
    assert [job.qualname for job in discover_docstring_jobs(tmp_path)] == ["fine"]
    assert ast.parse(source)  # the CRLF source itself is valid Python


def test_parameters_are_what_a_docstring_may_describe() -> None:
    source = (
        "class Point:\n"
        "    x: int\n"
        "    label = 'p'\n"
        "    def __init__(self, x, y=0, *rest, scale, **options): ...\n"
        "    def move(self, dx, /, dy): ...\n"
        "    @classmethod\n"
        "    def origin(cls): ...\n"
        "    @staticmethod\n"
        "    def parse(text): ...\n"
        "class Empty(Exception): ...\n"
        "def free(self, *, flag): ...\n"
    )
    found = {target.qualname: target.parameters for target in find_docstring_targets(source)}
    assert found == {
        "Point": ("x", "y", "*rest", "scale", "**options"),  # annotated fields, then __init__'s
        "Point.__init__": ("x", "y", "*rest", "scale", "**options"),
        "Point.move": ("dx", "dy"),
        "Point.origin": (),
        "Point.parse": ("text",),
        "Empty": (),
        "free": ("self", "flag"),  # a function's first parameter is a real one, whatever its name
    }
    assert find_docstring_targets(source)[0].inputs()["parameter_names"] == [
        "x",
        "y",
        "*rest",
        "scale",
        "**options",
    ]
