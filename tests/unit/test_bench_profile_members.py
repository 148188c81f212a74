"""`python -m inventory.bench.profile_members` prints, per service, a lone order's CPU beside a
member's, with both sides' batch sizes and each category's share: here from py-spy-shaped stacks
weighed as profile_order.py weighs them (the run itself needs py-spy and a stack)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from inventory.bench.profile_members import render
from inventory.bench.profile_stacks import top, weigh

FLASK = "full_dispatch_request (flask/app.py:880)"
SQL = "execute (sqlalchemy/engine/base.py:1400)"
HTTPX = "send (httpx/_client.py:900)"


def _load(orders: int, per_second: float, order_ms: float, stock_ms: float, batch: float) -> Any:
    def service(ms: float) -> Any:
        stacks = Counter({(FLASK,): 50, (FLASK, SQL): 30, (FLASK, HTTPX): 20})
        return top(weigh(stacks, ms), ms)

    return {
        "orders": orders,
        "errors": 0,
        "per_second": per_second,
        "sampled": "GIL holder",
        "services": {"order_service": service(order_ms), "stock_service": service(stock_ms)},
        "other_processes_ms_per_order": {"zookeeper": 0.1 * batch},
        "orders_per_batch": batch,
        "requests_per_hold": batch,
    }


def test_a_member_is_printed_beside_a_lone_order_per_service_and_category() -> None:
    summary = {
        "database": "postgresql",
        "lone": _load(600, 80.0, 8.0, 4.0, 1.0),
        "members": _load(3000, 300.0, 2.0, 1.5, 4.0),
    }
    text = render(summary, 16)
    assert "lone: 600 orders at 80.0/s, 1 caller; members: 3000 orders at 300.0/s, 16" in text
    assert (
        "-- order service: lone 8.00 ms per order at 1.0 orders per batch; member 2.00 ms at "
        "4.0: member / lone 0.25" in text
    )
    assert "-- stock service: lone 4.00 ms per order at 1.0 requests per lock hold" in text
    lines = text.splitlines()
    # Half of each service's samples end in Flask: 4.0 ms alone, 1.0 ms as a member.
    order_part = lines[lines.index(next(x for x in lines if x.startswith("-- order"))) :]
    flask = next(x for x in order_part if "request handling" in x)
    assert flask.split()[:3] == ["4.000", "1.000", "0.25"]
    assert "zookeeper 0.10 / 0.40" in text
