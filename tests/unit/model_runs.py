"""What the tests of each model's own spin runs ask (test_model_locations.py,
test_model_backorders.py): the intact worlds explored in full with no violation, each guard
removed ending in its counterexample, and every macro a variant sets one the model reads (a
macro it does not know compiles the intact model, and an expected-clean variant would pass for
nothing)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from inventory.model_check import Result, Variant


def assert_intact(intact: Result, at_least: int) -> None:
    assert intact.completed, "the search ran out of memory: nothing is proved"
    assert intact.errors == 0, intact.trace
    assert intact.states > at_least  # explored, not cut short


def assert_counterexample(found: Result, variant: str) -> None:
    assert found.errors > 0, f"{variant}: no counterexample"
    assert found.violation.startswith("assertion violated")
    assert found.trace[-1].startswith("VIOLATED")
    assert len(found.trace) >= 3


def assert_macros_known(model_file: Path, variants: Sequence[Variant]) -> None:
    text = model_file.read_text()
    for variant in variants:
        for macro in variant.macros:
            name = macro.split("=")[0]
            assert re.search(rf"^#(el)?if.*\b{name}\b", text, re.MULTILINE), (variant.name, name)
