"""The run's goods ids: unique to the run (a prefix), so the check reads only this run's rows,
and, with `--id-length`, each padded to exactly that many characters. Long ids make long
bodies: a hundred-line order of 64-character ids is about 9 KB of the order service's batched
reduceStock call, and a batch of them passes the stock service's MAX_BODY_BYTES at 7 orders
(what ORDER_BATCH_BYTES cuts it before)."""

from __future__ import annotations

import uuid

LONGEST = 64  # shared.web.schemas.IDENTIFIER_PATTERN: 1-64 characters


def run_prefix(seed: int) -> str:
    return f"lt{seed}-{uuid.uuid4().hex[:6]}-"


def shortest(seed: int, goods: int) -> int:
    """The fewest characters the run's longest goods id takes unpadded."""
    return len(f"lt{seed}-xxxxxx-{goods - 1}")


def goods_ids(prefix: str, goods: int, length: int | None = None) -> list[str]:
    """`goods` ids under `prefix`; with `length`, each padded to exactly that: `-` ends the
    number (so no two ids meet), then filler."""
    ids = [f"{prefix}{k}" for k in range(goods)]
    if length is None:
        return ids
    if not max(map(len, ids)) <= length <= LONGEST:
        raise ValueError(f"goods ids of {length} characters: {ids[-1]} is longer, or over 64")
    return [i if len(i) == length else f"{i}-".ljust(length, "x") for i in ids]
