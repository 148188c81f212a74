"""A check's verdict, shared by the chaos checks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

VALID, VIOLATED, UNKNOWN = "valid", "violated", "unknown"
COUNTED = "counted"  # a figure the report gives, not a verdict on the run


@dataclass
class Verdict:
    check: str
    name: str
    verdict: str
    detail: str
    counterexamples: list[str] = field(default_factory=list)


def violated_if(bad: Sequence[Any]) -> str:
    return VIOLATED if bad else VALID
