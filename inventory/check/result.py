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


def few(mapping: dict[str, Any], n: int = 3) -> str:
    """The first `n` items of a mapping, for a one-line detail, and how many more there are."""
    items = list(mapping.items())
    text = ", ".join(f"{k} {v}" for k, v in items[:n])
    return text + (f" (+{len(items) - n} more)" if len(items) > n else "")
