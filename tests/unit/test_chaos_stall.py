"""stall-lock-holder and its check ST (inventory/chaos/stalled_lock.py, stall_check.py): the
fault queues on the very lock path a stock replica queues on for a one-line deduction of a hot
goods id, holds it and lets it go; ST passes a history whose other goods ids' buyers were
answered beside the stall about as fast as in the fault-free window, and catches planted ones
where they waited for the stalled lock (the issue's 12 s), or where a few did past the bound."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from coordination.locks import lock_names
from coordination.locks.zookeeper import ZooKeeperLocks
from inventory.chaos import nemesis, stall_check, stalled_lock
from inventory.chaos.history import OK, UNKNOWN, Op
from inventory.chaos.verdict import UNKNOWN as NOT_JUDGED
from inventory.chaos.verdict import VALID, VIOLATED
from shared.config.settings import Settings

STALLED = "p-hot0"
BASELINE = (0.0, 10.0)
STALL = (12.0, 24.0)


def order(key: str, lines: dict[str, int], sent: float, waited: float, **kw: Any) -> Op:
    op = Op(key, 0, False, lines, sent, sent + waited, **kw)
    if op.outcome == OK:
        op.status, op.order_status = 200, "CONFIRMED"
    return op


def history(stall_waits: list[float], stalled_waits: list[float]) -> list[Op]:
    """60 fault-free orders of 0.2-0.8 s; during the stall, orders of other goods ids with the
    waits given and of the stalled goods id with theirs."""
    rng = random.Random(7)
    ops = [
        order(f"b{i}", {f"p-g{i % 20:03d}": 1}, BASELINE[0] + i * 0.15, rng.uniform(0.2, 0.8))
        for i in range(60)
    ]
    step = (STALL[1] - STALL[0]) / (len(stall_waits) + len(stalled_waits) + 1)
    at = STALL[0]
    for i, waited in enumerate(stall_waits):
        at += step
        ops.append(order(f"o{i}", {f"p-g{i % 20:03d}": 1, "p-hot1": 2}, at, waited, outcome=OK))
    for i, waited in enumerate(stalled_waits):
        at += step
        ops.append(order(f"s{i}", {STALLED: 1, "p-g001": 1}, at, waited, outcome=OK))
    return [op if op.status else _ok(op) for op in ops]


def _ok(op: Op) -> Op:
    op.outcome, op.status, op.order_status = OK, 200, "CONFIRMED"
    return op


def test_neighbours_answered_as_fast_as_without_the_stall_are_valid() -> None:
    rng = random.Random(3)
    ops = history([rng.uniform(0.3, 1.6) for _ in range(80)], [12.5, 13.0, 8.0, 16.0])
    verdict, figures = stall_check.stalled_neighbours(ops, STALLED, STALL, BASELINE)
    assert verdict.check == "ST" and verdict.verdict == VALID, verdict
    assert figures["others"] == 80 and figures["stalled"] == 4
    assert figures["bound_s"] == 2.0  # the fault-free p99 is under 1 s: the floor
    assert figures["p99_s"] <= 1.6 and figures["stalled_p99_s"] == 16.0
    assert "4 placed" in verdict.detail


def test_neighbours_held_up_by_the_stalled_lock_are_a_violation() -> None:
    """Today's stall: a batch with the stalled goods id answers when its slowest member has its
    lock or gives up, so the others in it wait the call timeout, are retried, and wait again."""
    rng = random.Random(4)
    waits = [rng.uniform(0.3, 1.0) for _ in range(60)] + [12.0] * 8 + [4.2] * 12
    ops = history(waits, [12.5, 13.0])
    verdict, figures = stall_check.stalled_neighbours(ops, STALLED, STALL, BASELINE)
    assert verdict.verdict == VIOLATED, verdict
    assert figures["p99_s"] == 12.0 and figures["over_bound"] == 20
    assert verdict.counterexamples[0].endswith(": 12.0 s")


def test_a_few_neighbours_past_the_bound_are_caught_by_the_p99() -> None:
    """Of 200 orders, the p99 (nearest rank) is the 198th: three past the bound are a
    violation, two are not."""
    rng = random.Random(5)
    calm = [rng.uniform(0.3, 1.0) for _ in range(200)]
    three = history([*calm[:197], 2.6, 3.0, 4.0], [])
    verdict, _ = stall_check.stalled_neighbours(three, STALLED, STALL, BASELINE)
    assert verdict.verdict == VIOLATED and len(verdict.counterexamples) == 3
    two = history([*calm[:198], 3.0, 4.0], [])
    verdict, _ = stall_check.stalled_neighbours(two, STALLED, STALL, BASELINE)
    assert verdict.verdict == VALID and "2 over it" in verdict.detail


def test_the_bound_is_the_floor_or_twice_the_fault_free_p99() -> None:
    assert stall_check.bound(0.4) == 2.0
    assert stall_check.bound(1.0) == 2.0
    assert stall_check.bound(1.7) == pytest.approx(3.4)
    # It always leaves a neighbour the batch's budget (1 s) above its fault-free time
    for p in (0.1, 0.5, 0.99, 1.0, 1.5, 3.0):
        assert stall_check.bound(p) >= p + 1.0
    assert stall_check.p99([float(i) for i in range(1, 101)]) == 99.0
    assert stall_check.p99([1.0, 5.0]) == 5.0


def test_a_buyers_wait_runs_from_its_first_send_to_its_first_definite_answer() -> None:
    ops = [
        Op("k", 0, False, {"g": 1}, 1.0, 5.0, status=503),  # no answer it could keep
        Op("k", 2, False, {"g": 1}, 5.5, 6.0, status=200, outcome=OK, order_status="CONFIRMED"),
        # a double submit is the same buyer: answered once either send is
        Op("d", 0, False, {"g": 1}, 1.0, 9.0, status=200, outcome=OK, order_status="CONFIRMED"),
        Op("d", 1, True, {"g": 1}, 1.0, 1.5, status=200, outcome=OK, order_status="BACKORDERED"),
        Op("r", 0, False, {"g": 1}, 2.0, 3.0, status=409, order_status="CANCELLED"),
        Op("u", 0, False, {"g": 1}, 2.0, 9.0, status=202, order_status="PENDING"),
        Op("u", 2, False, {"g": 1}, 9.5, 14.0, status=202, order_status="PENDING"),
    ]
    found = {w.key: w for w in stall_check.waits(ops)}
    assert found["k"].seconds == 5.0 and found["k"].outcome == OK
    assert found["d"].seconds == 0.5
    assert found["r"].seconds == 1.0 and found["r"].outcome == UNKNOWN  # definite: a 409
    assert found["u"].seconds == 12.0  # never definite: until its last answer


def test_big_orders_are_not_judged() -> None:
    """A big order (50 or 100 lines of the run's hundred big goods ids) contends with the other
    big orders whatever the fault: in neither window."""
    rng = random.Random(8)
    big = {f"p-big{i:03d}": 1 for i in range(50)}
    ops = history([rng.uniform(0.3, 1.0) for _ in range(60)], [])
    ops += [order(f"x{i}", big, STALL[0] + i, 6.0, outcome=OK) for i in range(5)]
    verdict, figures = stall_check.stalled_neighbours(ops, STALLED, STALL, BASELINE)
    assert verdict.verdict == VALID and figures["others"] == 60, verdict


def test_no_stall_or_too_few_orders_cannot_be_judged() -> None:
    verdict, _ = stall_check.stalled_neighbours(history([0.5] * 30, []), STALLED, None, BASELINE)
    assert verdict.verdict == NOT_JUDGED and "never held" in verdict.detail
    verdict, _ = stall_check.stalled_neighbours(history([0.5] * 5, []), STALLED, STALL, BASELINE)
    assert verdict.verdict == NOT_JUDGED and "too few" in verdict.detail


def test_judge_reads_the_stalls_times_from_the_runs_start() -> None:
    started = 1000.0
    held = stalled_lock.Stall(STALLED, "/inventory/locks/p-hot0", node="n", token=7)
    held.acquired, held.released = started + STALL[0], started + STALL[1]
    never = stalled_lock.Stall("p-hot2", "/inventory/locks/p-hot2", error="not had")
    verdicts: list[Any] = []
    rng = random.Random(6)
    ops = history([rng.uniform(0.3, 1.0) for _ in range(40)], [12.0])
    figures = stall_check.judge(ops, started, BASELINE[1], verdicts, stalls=[held, never])
    assert [v.verdict for v in verdicts] == [VALID, NOT_JUDGED]
    assert figures[0]["stall"] == STALL and figures[0]["token"] == 7


def test_the_fault_queues_on_the_stock_services_own_lock_path() -> None:
    settings = Settings()
    [name] = lock_names([STALLED], settings.lock_scope)
    replica = ZooKeeperLocks("127.0.0.1:1", settings.lock_root)  # connects on first use only
    assert stalled_lock.lock_path(STALLED) == replica.path(name) == "/inventory/locks/p-hot0"
    goods = ["p-hot0", "p-hot1", "p-hot2"]
    picked = {stalled_lock.target(goods, random.Random(seed)) for seed in range(30)}
    assert picked <= set(goods) and len(picked) > 1
    with pytest.raises(ValueError):
        stalled_lock.target([], random.Random(1))


class FakeClaim:
    def __init__(self, locks: FakeLocks, names: list[str]) -> None:
        self.locks, self.names = locks, names

    def wait(self, deadline: float) -> frozenset[str]:
        return frozenset(self.names) if self.locks.grant else frozenset()

    def lease(self, names: list[str]) -> Any:
        from coordination.locks.base import Lease

        node = f"/inventory/locks/{names[0]}/ours__lock__0000000003"
        return Lease({n: 42 for n in names}, details={n: node for n in names})

    def release(self, names: list[str]) -> None:
        self.locks.released += names


class FakeLocks:
    """The backend's surface the fault uses: a claim, the lock path's children, close."""

    def __init__(self, grant: bool) -> None:
        self.grant, self.closed = grant, False
        self.released: list[str] = []
        self.client = self

    def new_claim(self, names: list[str]) -> FakeClaim:
        return FakeClaim(self, names)

    def get_children(self, path: str) -> list[str]:
        return ["ours__lock__0000000003", "a__lock__0000000004", "b__lock__0000000005"]

    def close(self) -> None:
        self.closed = True


def test_the_fault_holds_the_lock_until_its_release_and_counts_who_queued() -> None:
    locks = FakeLocks(grant=True)
    stall = stalled_lock.hold(locks, STALLED)
    assert stall.acquired is not None and stall.token == 42 and stall.node.endswith("0003")
    assert locks.released == []  # held until the heal
    stalled_lock.release(stall)
    assert locks.released == [STALLED] and locks.closed
    assert stall.queued_at_release == stall.most_queued == 2 and stall.released is not None
    assert stall.released >= stall.acquired and stall.released <= time.monotonic()
    refused = stalled_lock.hold(FakeLocks(grant=False), STALLED)
    assert refused.acquired is None and "not had" in refused.error


def test_the_fault_is_in_the_full_and_the_quick_run_first_after_the_baseline() -> None:
    fault = nemesis.FAULTS["stall-lock-holder"]
    assert fault.hold == stalled_lock.STALL == 12.0 and not fault.stock_settings
    assert nemesis.QUICK[0] == "stall-lock-holder"


def test_an_order_still_waiting_when_the_next_fault_begins_is_that_fault_s_not_the_stall_s() -> (
    None
):
    """Sent in the stall's last moments and caught by the next fault (a ZooKeeper cut of a stock
    host 5 s after the heal), an order's wait is that fault's doing: left out and counted; the
    same history judged with no next fault is a violation, so the leaving out is what passes."""
    rng = random.Random(5)
    waits = [rng.uniform(0.3, 1.0) for _ in range(78)]
    ops = history(waits, [12.5])
    late = STALL[1] - 0.5
    ops += [order(f"late{i}", {"p-g007": 1}, late, 12.0, outcome=OK) for i in range(2)]
    verdict, figures = stall_check.stalled_neighbours(ops, STALLED, STALL, BASELINE, STALL[1] + 5)
    assert verdict.verdict == VALID, verdict
    assert figures["cut_by_next_fault"] == 2 and figures["others"] == 78
    alone, _ = stall_check.stalled_neighbours(ops, STALLED, STALL, BASELINE)
    assert alone.verdict == VIOLATED, alone
