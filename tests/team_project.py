"""A small project for the docstring_team tests (embedded with the real model, distributed).

Four docstring targets: few enough for the model test, and ids of their own (job ids are
stable per target; the distributed tests share one store with the sample-project batches).
"""

from __future__ import annotations

from pathlib import Path

SHAPES = (
    "def area(width: float, height: float) -> float:\n    return width * height\n\n\n"
    "class Square:\n    def __init__(self, side: float) -> None:\n        self.side = side\n\n"
    "    def perimeter(self) -> float:\n        return 4 * self.side\n"
)


def write_team_project(root: Path) -> Path:
    """The project under ``root`` (created); returns ``root``."""
    (root / "geometry").mkdir(parents=True)
    (root / "geometry" / "shapes.py").write_text(SHAPES)
    return root
