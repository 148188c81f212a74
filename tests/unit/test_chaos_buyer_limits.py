"""PB, the chaos run's check of per-buyer limits, on hand-made histories and final rows: a buyer
over a goods id's limit in the orders that count at the end, and a 409 limit_per_buyer whose
order did not end FAILED with that reason, are each caught; a run without either passes. And
what the rest of the chaos checks make of a limit's refusal: a definite refusal (H2, H3), not a
lost sale (LS); and the workload's rushes: one buyer, one goods id, several keys at once, against
a small fake order service with the limit: sent together, refused past the limit, a cancel
freeing room that a later rush takes, and PB valid on what the fake holds at the end."""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from inventory.chaos import buyer_limits, checker
from inventory.chaos.after_sale import order_body
from inventory.chaos.buyer_limits import LIMIT, RUSH, limits_hold, rush
from inventory.chaos.history import FAIL, OK, UNKNOWN, Op, classify
from inventory.chaos.history_checks import one_order_per_key, refused_is_failed
from inventory.chaos.verdict import VALID, VIOLATED
from inventory.chaos.workload import Workload, make_goods
from inventory.check import Snapshot
from inventory.check.buyers import BuyerOrder, held_units, over_the_limit

G, H = "cz1abcde-lim0", "cz1abcde-lim1"
LIMITS = {G: LIMIT, H: LIMIT}
REFUSED = {"orderId": "", "status": "FAILED", "reason": "limit_per_buyer", "goodsId": G}


def order(
    order_id: str,
    user: str,
    status: str = "CONFIRMED",
    units: int = 1,
    goods: str = G,
    reason: str | None = None,
) -> BuyerOrder:
    return BuyerOrder(order_id, user, status, reason, {goods: units})


def refusal(key: str, order_id: str) -> Op:
    op = Op(key, 0, False, {G: 1}, 0.0, 0.1, 409)
    op.outcome, op.order_id, op.order_status, op.reason = classify(
        409, {**REFUSED, "orderId": order_id}
    )
    return op


def placed(key: str, order_id: str) -> Op:
    op = Op(key, 0, False, {G: 1}, 0.0, 0.1, 200)
    op.outcome, op.order_id, op.order_status, op.reason = classify(
        200, {"orderId": order_id, "status": "CONFIRMED"}
    )
    return op


def by_id(*orders: BuyerOrder) -> dict[str, BuyerOrder]:
    return {o.order_id: o for o in orders}


def limited() -> dict[str, BuyerOrder]:
    """b1 at the limit of G (two orders of one), another cancelled, one refused by the limit;
    b2 at the limit of G with one order of two, and of H too; b3 with a FAILED order."""
    return by_id(
        order("o1", "b1"),
        order("o2", "b1"),
        order("o3", "b1", "CANCELLED"),
        order("o4", "b1", "FAILED", reason="limit_per_buyer"),
        order("o5", "b2", units=2),
        order("o6", "b2", "AWAITING_PAYMENT", units=2, goods=H),
        order("o7", "b3", "FAILED", units=2, reason="insufficient_stock"),
    )


def test_buyers_within_their_limit_and_refusals_that_held_are_valid() -> None:
    found = limited()
    verdict = limits_hold([placed("k1", "o1"), refusal("k4", "o4")], found, LIMITS)
    assert verdict.verdict == VALID, verdict
    assert verdict.check == "PB" and verdict.counterexamples == []
    assert "1 orders refused by the limit" in verdict.detail
    # What counts: every status but FAILED and CANCELLED, in units, per goods id.
    assert held_units(found.values(), G) == {"b1": 2, "b2": 2}
    assert held_units(found.values(), H) == {"b2": 2}


def test_a_buyer_over_the_limit_at_the_end_is_caught() -> None:
    for extra in (
        order("o8", "b1"),  # a third unit, CONFIRMED
        order("o8", "b1", "PENDING"),  # still counted: not FAILED, not CANCELLED
        order("o8", "b1", "CANCELLING"),  # its stock on its way back: still counted
        order("o8", "b2", "BACKORDERED"),  # b2: 3 units of G
    ):
        found = {**limited(), extra.order_id: extra}
        verdict = limits_hold([], found, LIMITS)
        assert verdict.verdict == VIOLATED, extra
        [said] = verdict.counterexamples
        assert said.startswith(f"{G}/{extra.user}: 3 units") and f"limit {LIMIT}" in said
    # The same third order ended FAILED or CANCELLED: it counts for nothing.
    for status in ("FAILED", "CANCELLED"):
        found = {**limited(), "o8": order("o8", "b1", status)}
        assert limits_hold([], found, LIMITS).verdict == VALID
    # Over one goods id's limit is judged against that goods id alone.
    assert over_the_limit(list(limited().values()), {G: 1}) == {f"{G}/b1": 2, f"{G}/b2": 2}
    assert over_the_limit(list(limited().values()), {H: 1}) == {f"{H}/b2": 2}


def test_a_limit_refusal_whose_order_did_not_end_failed_so_is_caught() -> None:
    for end in (
        order("o4", "b1", "FAILED", reason="insufficient_stock"),  # another reason
        order("o4", "b1", "FAILED", reason=None),
        order("o4", "b1", "CANCELLED", reason="limit_per_buyer"),
    ):
        found = {**limited(), "o4": end}
        verdict = limits_hold([refusal("k4", "o4")], found, {G: 5, H: 5})
        assert verdict.verdict == VIOLATED, end
        assert verdict.counterexamples[0].startswith("o4: answered 409 limit_per_buyer (key k4)")
    # Placed after all (confirmed later): over the limit too, and not held.
    found = {**limited(), "o4": order("o4", "b1")}
    verdict = limits_hold([refusal("k4", "o4")], found, LIMITS)
    assert verdict.verdict == VIOLATED
    assert any(c.startswith("o4: answered 409") for c in verdict.counterexamples)
    assert any(c.startswith(f"{G}/b1: 3 units") for c in verdict.counterexamples)
    # An order the refusal named and the database does not have.
    verdict = limits_hold([refusal("k9", "o9")], limited(), LIMITS)
    assert verdict.verdict == VIOLATED and verdict.counterexamples == [
        "o9: answered 409 limit_per_buyer (key k9), ends missing"
    ]
    # A reason that merely starts with the refusal's (the service may say more) holds.
    found = {**limited(), "o4": order("o4", "b1", "FAILED", reason="limit_per_buyer: had 2")}
    assert limits_hold([refusal("k4", "o4")], found, LIMITS).verdict == VALID


def test_a_limit_refusal_is_a_definite_refusal_to_the_other_checks() -> None:
    op = refusal("k4", "o4")
    assert op.outcome == FAIL and buyer_limits.refused_by_the_limit(op)
    # Not a refusal: another 409 FAILED, a 202, no answer.
    other = {**REFUSED, "orderId": "o4", "reason": "lock_timeout"}
    assert classify(409, other)[0] == UNKNOWN
    assert classify(202, {"orderId": "o4", "status": "PENDING"})[0] == UNKNOWN
    # H2: FAILED without flows; H3: one order, one verdict per key.
    snap = Snapshot({}, {}, [], {}, {"o4": "FAILED"}, {"o4": {G: 1}})
    assert refused_is_failed([op], snap).verdict == VALID
    flowed = Snapshot({}, {}, [], {"o4": {G: 1}}, {"o4": "FAILED"}, {"o4": {G: 1}})
    assert refused_is_failed([op], flowed).verdict == VIOLATED
    twice = [op, placed("k4", "o4")]
    assert one_order_per_key(twice).verdict == VIOLATED
    # LS: a limit's refusal with stock left is a rule applied, not a sale lost.
    levels = {G: (100, 100, 1)}
    reasons = {"o4": "limit_per_buyer", "o5": "lock_timeout: zookeeper"}
    snap = Snapshot(levels, {}, [], {}, {"o4": "FAILED", "o5": "FAILED"}, {"o4": {G: 1}})
    snap.reasons.update(reasons)
    snap.lines["o5"] = {G: 1}
    assert checker.lost_orders(snap) == {"o5": "lock_timeout"}


def test_a_rush_is_one_buyers_orders_of_one_goods_id_under_keys_of_their_own() -> None:
    goods = make_goods("cz1abcde-")
    assert set(goods.limited) == {G, H} and goods.limited.items() <= goods.levels.items()
    rng = random.Random(5)
    rushes = [rush(rng, list(goods.limited)) for _ in range(400)]
    for orders, _ in rushes:
        assert len(orders) == RUSH and len({g for o in orders for g in o}) == 1
        assert all(set(o.values()) <= {1, 2} for o in orders)
    doubles = Counter(double for _, double in rushes)
    assert 0.15 < doubles[True] / len(rushes) < 0.35, doubles
    # Each order's key keeps the buyer's userId (the workload's `b<thread>`): one buyer.
    stem = "cz1abcde-b7-12"
    users = {
        order_body(f"{stem}r{j}", {G: 1}, "none").split(b'"userId": "')[1][:2] for j in range(4)
    }
    assert users == {b"b7"}


def test_an_order_answered_placed_is_no_refusal() -> None:
    assert placed("k1", "o1").outcome == OK
    assert not buyer_limits.refused_by_the_limit(placed("k1", "o1"))


# --- the workload's rushes against a small fake order service ---------------------------------


class FakeOrders(ThreadingHTTPServer):
    """genOrder with a per-buyer limit (one key, one answer), and cancel by id; it notes how
    many of one buyer's orders were in flight at once."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), FakeHandler)
        self.guard = threading.Lock()
        self.answers: dict[str, tuple[int, dict[str, Any]]] = {}
        self.orders: dict[str, BuyerOrder] = {}
        self.in_flight: Counter[str] = Counter()
        self.most_at_once = 0


class FakeHandler(BaseHTTPRequestHandler):
    server: FakeOrders

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        fake = self.server
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.startswith("/orders/"):
            order_id = self.path.split("/")[2]
            with fake.guard:
                was = fake.orders[order_id]
                fake.orders[order_id] = BuyerOrder(order_id, was.user, "CANCELLED", None, was.lines)
            return self._answer(200, {"orderId": order_id, "status": "CANCELLED"})
        body, key = json.loads(raw), self.headers["Idempotency-Key"]
        user, [item] = body["userId"], body["items"]
        with fake.guard:
            fake.in_flight[user] += 1
            fake.most_at_once = max(fake.most_at_once, fake.in_flight[user])
        time.sleep(0.05)  # the others of its rush arrive meanwhile
        with fake.guard:
            fake.in_flight[user] -= 1
            if key not in fake.answers:
                goods, num = item["goodsId"], item["num"]
                had = held_units(fake.orders.values(), goods).get(user, 0)
                order_id = f"o{len(fake.orders)}"
                if had + num > LIMIT:
                    fake.orders[order_id] = BuyerOrder(
                        order_id, user, "FAILED", "limit_per_buyer", {goods: num}
                    )
                    fake.answers[key] = (409, {**REFUSED, "orderId": order_id, "had": had})
                else:
                    fake.orders[order_id] = BuyerOrder(
                        order_id, user, "CONFIRMED", None, {goods: num}
                    )
                    fake.answers[key] = (200, {"orderId": order_id, "status": "CONFIRMED"})
            status, answer = fake.answers[key]
        self._answer(status, answer)

    def _answer(self, status: int, answer: dict[str, Any]) -> None:
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_a_buyers_rushes_go_at_once_under_their_keys_and_cancels_free_room() -> None:
    fake = FakeOrders()
    serving = threading.Thread(target=fake.serve_forever, daemon=True)
    serving.start()
    try:
        goods = make_goods("cz1abcde-", hot=0, others=0, big=0, located=0, owed=0, reserved=0)
        load = Workload("127.0.0.1", fake.server_address[1], goods)
        rng, holding = random.Random(11), list[Op]()
        conn = load._connect()
        for i in range(12):
            load._rush(conn, rng, f"cz1abcde-b7-{i}", holding)
        conn.close()
    finally:
        fake.shutdown()
        fake.server_close()
    orders = [op for op in load.ops if op.kind == "order"]
    assert load.orders == 12 * RUSH and fake.most_at_once >= 3  # a rush's orders at once
    assert {fake.orders[op.order_id or ""].user for op in orders} == {"b7"}  # one buyer
    keys = {op.key for op in orders}
    assert len(keys) == 12 * RUSH and all(re.fullmatch(r"cz1abcde-b7-\d+r[0-3]", k) for k in keys)
    assert any(op.double for op in orders)  # a first order sent twice under its key
    outcomes = Counter(op.outcome for op in orders)
    assert outcomes[OK] > 0 and outcomes[FAIL] > 0 and outcomes[UNKNOWN] == 0, outcomes
    cancels = [op for op in load.ops if op.kind == "cancel"]
    assert cancels and all(op.status == 200 for op in cancels)
    # A cancelled order was meant to be: its ops say so (H1, H5); the others' do not.
    cancelled = {o.order_id for o in fake.orders.values() if o.status == "CANCELLED"}
    assert cancelled == {op.order_id for op in cancels}
    for op in orders:
        assert (op.intent == "cancel") == (op.order_id in cancelled), op
    # Orders placed after a cancel: the room it freed was used again.
    first_cancel = min(op.invoke for op in cancels)
    assert any(op.outcome == OK and op.invoke > first_cancel for op in orders)
    assert limits_hold(load.ops, fake.orders, LIMITS).verdict == VALID
