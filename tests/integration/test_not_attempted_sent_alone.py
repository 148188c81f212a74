"""An order its batch's call answered `not_attempted` (its goods id's lock not had within the
call's budget) is sent again alone, on the article's route, in its own request's thread: it
waits for its lock as a lone order's call does and is answered with its outcome, while its
batch's other orders have theirs at the budget. Before, it was handed back unknown and ended
PENDING for the reconciler, though its lock was free a moment later. PostgreSQL, real
ZooKeeper and Redis, both services in this process (the rig of
test_stalled_lock_neighbours.py, with a stall shorter than a lone call's wait)."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import unique
from tests.helpers import Services
from tests.integration.test_stalled_lock_neighbours import (
    FREE,
    PilotFirst,
    Stall,
    services,  # noqa: F401  (the fixture: the services' own call and lock timeouts)
    wave,
)

pytestmark = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)

STALL = 2.5  # past the batch's 1 s budget, well inside a lone call's 5 s


def test_a_member_not_attempted_is_sent_again_alone_and_confirmed_in_its_own_answer(
    services: Services,  # noqa: F811
) -> None:
    s = services
    stalled, free = unique("stalled"), [unique("free") for _ in range(FREE)]
    for goods in [stalled, *free]:
        s.seed(goods, 10)
    pilot = PilotFirst(s)
    stall = Stall(s.settings, stalled, STALL)
    try:
        with ThreadPoolExecutor(FREE + 2) as pool:
            others, stalled_order = wave(s, pool, pilot, free, stalled)
            freed = [f.result(60) for f in others]
            took, answer = stalled_order.result(60)
    finally:
        stall.end()
    seconds = sorted(t for t, _ in freed)
    p99 = seconds[math.ceil(0.99 * len(seconds)) - 1]
    assert all(a.json["status"] == "CONFIRMED" for _, a in freed)
    assert p99 < 2.0, f"the batch's other orders waited for the stalled one: {seconds}"
    assert (answer.status_code, answer.json["status"]) == (200, "CONFIRMED"), (took, answer.json)
    assert [row["num"] for row in s.flows(flag=answer.json["orderId"])] == [1]
    assert s.level(stalled) == 9
