"""What the chaos run's consumer of the stock events fetches from the stock database when its
reads of the stream were interrupted (a Redis restarted, failed over, its group gone): the
events after an id, from GET /stock-events, page by page, as any consumer can
(docs/ledger.md, catching up). The route is open: no credential is needed or sent."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx

PAGE = 1000  # the route's largest page
TIMEOUT = 10.0


def last_id(base_url: str) -> int:
    """The highest event id in the outbox now: a consumer that starts here gets every event
    written from now on."""
    answer = httpx.get(f"{base_url}/stock-events", params={"limit": 1}, timeout=TIMEOUT)
    answer.raise_for_status()
    return int(answer.json()["last"])


def events_after(base_url: str, after: int) -> Iterator[dict[str, Any]]:
    """Every event with an id above `after`, oldest first, until a page comes back empty."""
    with httpx.Client(base_url=base_url, timeout=TIMEOUT) as client:
        while True:
            answer = client.get("/stock-events", params={"after": after, "limit": PAGE})
            answer.raise_for_status()
            page = answer.json()
            yield from page["events"]
            if not page["events"]:
                return
            after = page["next"]
