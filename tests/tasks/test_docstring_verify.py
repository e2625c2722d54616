"""The docstring verifier on hand-written docstrings: good ones pass untouched, what can be
repaired is (and named), what cannot is flagged with its reason."""

from __future__ import annotations

from structured_agents.tasks.docstring.verify import Finding, Parts, Target, general_words, verify

AREA = Target(
    qualname="Rectangle.area",
    kind="method",
    source="def area(self) -> float:\n    return self.width * self.height\n",
    gives="returns",
    file_text="class Rectangle:\n    def __init__(self, width, height):\n        self.width = width\n",
)
VALMAP = Target(
    qualname="valmap",
    kind="function",
    source=(
        "def valmap(func, d, factory=dict):\n"
        "    rv = factory()\n"
        "    rv.update(zip(d.keys(), map(func, d.values())))\n"
        "    return rv\n"
    ),
    gives="returns",
    parameters=("func", "d", "factory"),
)
CLEAR = Target(
    qualname="Cache.clear",
    kind="method",
    source="def clear(self):\n    self._items.clear()\n",
    parameters=(),
)
CORNER = Target(
    qualname="Rectangle.Corner",
    kind="class",
    source="class Corner:\n    def __init__(self, x, y):\n        self.x, self.y = x, y\n",
    parameters=("x", "y"),
)
RADIUS = Target(
    qualname="Circle.radius",
    kind="method",
    source="@property\ndef radius(self) -> float:\n    return self._radius\n",
)
WALK = Target(
    qualname="walk",
    kind="function",
    source="def walk(tree):\n    for node in tree:\n        yield node\n",
    gives="yields",
    parameters=("tree",),
)


def _codes(verdict_findings: tuple[Finding, ...]) -> list[str]:
    return [finding.code for finding in verdict_findings]


def test_a_good_docstring_passes_untouched() -> None:
    parts = Parts(
        "Apply func to every value of d.",
        {
            "func": "Called on each value.",
            "d": "The mapping whose values change.",
            "factory": "Makes the new mapping.",
        },
        ("returns", "A new mapping with the same keys and the changed values."),
    )
    verdict = verify(parts, VALMAP)
    assert verdict.clean and verdict.parts == parts and verdict.repairs == ()


def test_an_invented_subject_is_flagged() -> None:
    verdict = verify(Parts("Return the area of a triangle."), AREA)
    assert _codes(verdict.findings) == ["unknown-words"] and "triangle" in str(verdict.findings[0])
    assert verify(Parts("Return the area of the rectangle."), AREA).clean
    slugify = Target(
        qualname="slugify",
        kind="function",
        source="def slugify(text):\n    return '-'.join(text.lower().split())\n",
        gives="returns",
        file_text="",
    )
    assert verify(Parts("Return the slug of the text."), slugify).clean  # "slug" begins its name
    assert not verify(Parts("Return the slog of the text."), slugify).clean


def test_a_false_returns_none_drops_the_sections_and_keeps_the_summary() -> None:
    verdict = verify(Parts("Return the area of the rectangle.", {}, ("returns", "None.")), AREA)
    assert verdict.clean and verdict.parts == Parts("Return the area of the rectangle.")
    assert "returns: says 'None.'" in verdict.repairs[0]


def test_type_only_repeated_and_name_only_descriptions_drop_every_section() -> None:
    for parameters in (
        {"func": "Callable.", "d": "A dictionary object.", "factory": "Makes the new mapping."},  # types only
        {
            "func": "The value of the parameter.",
            "d": "The mapping to read.",
            "factory": "Makes it.",
        },  # boilerplate
        {"func": "The function applied.", "d": "The function applied.", "factory": "Makes it."},  # repeated
        {"func": "The func.", "d": "The mapping to read.", "factory": "Makes it."},  # its own name
        {"func": "A pointer to a pointer to a pointer to a.", "d": "The mapping.", "factory": "Makes it."},
    ):
        verdict = verify(
            Parts("Apply func to every value of d.", parameters, ("returns", "The new mapping.")), VALMAP
        )
        assert verdict.parts == Parts("Apply func to every value of d."), parameters
        assert verdict.repairs and verdict.repairs[0].startswith("sections dropped"), parameters
        assert verdict.clean


def test_a_description_that_only_names_the_annotated_type_drops_the_sections() -> None:
    target = Target(
        "Collection.add_source",
        "method",
        "def add_source(self, multi_cmd: MultiCommand) -> None:\n    self.sources.append(multi_cmd)\n",
        parameters=("multi_cmd",),
    )
    verdict = verify(Parts("Add a source to the collection.", {"multi_cmd": "MultiCommand."}), target)
    assert verdict.parts == Parts("Add a source to the collection.") and verdict.clean
    kept = Parts("Add a source to the collection.", {"multi_cmd": "The command whose commands join."})
    assert verify(kept, target).parts == kept


def test_a_return_claim_on_code_that_returns_nothing_is_flagged() -> None:
    assert _codes(verify(Parts("Return the items after clearing them."), CLEAR).findings) == ["return-claim"]
    assert _codes(verify(Parts("Returns a corner of the rectangle."), CORNER).findings) == ["return-claim"]
    assert verify(Parts("Remove every item."), CLEAR).clean
    assert verify(Parts("Return the radius of the circle."), RADIUS).clean  # a property: no false claim


def test_a_yield_claim_on_code_that_is_no_generator_is_flagged() -> None:
    assert _codes(verify(Parts("Yield every value of d."), VALMAP).findings) == ["yield-claim"]
    assert verify(Parts("Yield every node of the tree."), WALK).clean


def test_names_and_exceptions_the_code_never_mentions_are_flagged() -> None:
    verdict = verify(Parts("Raise FrozenTypeError when values_map is empty."), VALMAP)
    assert "unknown-name" in _codes(verdict.findings)
    assert "FrozenTypeError" in str(verdict.findings) and "values_map" in str(verdict.findings)
    assert verify(Parts("Update rv from the keys of d."), VALMAP).clean  # rv is the code's own name


def test_summaries_that_say_nothing_or_stop_or_hold_code_are_flagged() -> None:
    assert _codes(verify(Parts("Use."), VALMAP).findings) == ["vacuous"]
    assert _codes(verify(Parts("This is a valmap function."), VALMAP).findings) == ["vacuous"]
    assert _codes(verify(Parts("Return a mapping with the values of the."), VALMAP).findings) == ["truncated"]
    assert _codes(verify(Parts("Apply func to each value of the given."), VALMAP).findings) == ["truncated"]
    assert verify(Parts("Apply func to each value of the given mapping."), VALMAP).clean
    assert _codes(verify(Parts("Return zip(d.keys(), values)."), VALMAP).findings)[0] == "code-fragment"
    words = "apply func to each value of d then store every result under its own key in a new mapping "
    long = (
        words + "made by factory while the original mapping d stays exactly as it was before"
    ).capitalize()
    assert "too-long" in _codes(verify(Parts(long + "."), VALMAP).findings)


def test_a_summary_that_repeats_itself_is_cut_where_the_repeat_starts() -> None:
    verdict = verify(Parts("The area of the rectangle, the area of the rectangle, the area."), AREA)
    assert verdict.parts.summary == "The area of the rectangle."
    assert verdict.repairs == ("summary cut where it started repeating itself",)


def test_the_parts_round_trip_through_the_call_arguments() -> None:
    arguments = {"description": "Do it.", "parameters": {"*args": "The rest."}, "returns": "The result."}
    parts = Parts.of(arguments)
    assert parts == Parts("Do it.", {"args": "The rest."}, ("returns", "The result."))
    assert parts.arguments() == {
        "description": "Do it.",
        "parameters": {"args": "The rest."},
        "returns": "The result.",
    }


def test_the_general_vocabulary_holds_common_words_and_not_subjects() -> None:
    general = general_words()
    assert {"valu", "dictionary", "sequenc", "lock"} <= general
    assert not {"triangl", "radiu", "inch"} & general
