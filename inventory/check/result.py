"""One invariant's verdict on a snapshot or a history, as every check reports it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class CheckResult:
    invariant: str
    name: str
    ok: bool
    detail: str
    numbers: dict[str, Any] = field(default_factory=dict)
