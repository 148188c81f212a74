"""`inventory demo backorders`: selling what is not here yet, and holding what is
(docs/backorders.md), on a stack of its own, each step with the figures before and after it.

1. A phone with nothing on hand and a backorder limit of 3 (PUT /stock/{goodsId}/policy).
2. Three buyers order one each with fill=backorder: each BACKORDERED, in line in the order they
   came (the place is the seq of the line's `backordered` ledger entry); the units owed are 3.
3. A fourth buyer: 4 owed would pass the limit: refused (409 FAILED), nothing owed.
4. A restock of two phones: the two oldest lines filled in the restock's commit, the third
   still waiting, nothing left on hand.
5. One pass of the product's reconciler (the scenario's stack runs none, so the pass comes when
   the story tells it, not within RECONCILE_INTERVAL): the two filled orders CONFIRMED, the
   third still BACKORDERED.
6. A reservation of two cases for 1 s: the units held; left alone past its expiry, a read
   changes nothing, a pass expires it and its units come back; a second pass returns nothing.
7. A reservation turned into an order (genOrder with reservationId): one deduction, one flow.
The invariants (I1-I9) and the locations' (L1-L4) are checked at the end.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from rich.console import Console

from inventory.local.client import StackClient
from inventory.scenarios.locations import location_checks
from inventory.scenarios.rig import ScenarioResult, Story, finish, scenario_stack
from inventory.scenarios.settle import settle_pending
from inventory.scenarios.shelves import short
from inventory.scenarios.waiting import Counter, Line

LIMIT = 3
BUYERS = ("ann", "ben", "cat")
BEFORE_AFTER = "on hand, held, owed and the limit, before -> after:"


def backorders(console: Console | None = None) -> ScenarioResult:
    story = Story(console)
    prefix = f"sc-bo-{uuid.uuid4().hex[:6]}-"
    phone, case = prefix + "phone", prefix + "case"
    with scenario_stack("backorders") as state:
        client = StackClient(state)
        counter = Counter(client, state, story, [phone, case])
        try:
            _set_up(counter, phone, case)
            facts: dict[str, Any] = {"line": _line(counter, phone)}
            facts["fourth"] = _fourth(counter, phone)
            facts["restock"] = _restock(counter, phone, facts["line"]["buyers"])
            facts["pass"] = _confirm(counter, facts["line"]["buyers"])
            facts["expired"] = _expiry(counter, case)
            facts["consumed"] = _consumed(counter, case)
            story.step(
                "The checks: the invariants (I1-I9, as `inventory check`), then the locations' "
                "(L1-L4: every unit here is at `default`)."
            )
            checks = finish(state, story, prefix) + location_checks(state, story, prefix)
            facts["violated"] = [f"{c.invariant} {c.name}" for c in checks if not c.ok]
        finally:
            client.close()
    return _verdict(facts, checks)


def _set_up(counter: Counter, phone: str, case: str) -> None:
    counter.story.step(
        f"A phone with nothing on hand, and a backorder limit of {LIMIT}: fill=backorder may "
        f"owe up to {LIMIT} phones at once. Cases: 5 on hand, for the reservations."
    )

    def seed() -> None:
        counter.client.seed(phone, 0)
        counter.client.seed(case, 5)
        put = counter.client.stock.put(f"/stock/{phone}/policy", json={"backorderLimit": LIMIT})
        put.raise_for_status()
        counter.story.show(
            f'PUT /stock/{short(phone)}/policy {{"backorderLimit": {LIMIT}}} -> {put.status_code}'
        )

    counter.around(
        f"PUT /stock/{{goodsId}} (phone 0, case 5), then the policy; {BEFORE_AFTER}", seed
    )


def _order(counter: Counter, user: str, goods_id: str, num: int, **extra: Any) -> dict[str, Any]:
    body = {"userId": user, "items": [{"goodsId": goods_id, "num": num}], **extra}
    answer = counter.client.gen_order(body)
    got: dict[str, Any] = answer.json()
    said = " ".join(f"{k}={v}" for k, v in extra.items() if k != "reservationId")
    owed = ", ".join(f"{short(b['goodsId'])} {b['num']}" for b in got.get("backordered", []))
    counter.story.show(
        f"POST /genOrder {user}: {short(goods_id)} x{num} {said} -> HTTP {answer.status_code} "
        f"{got.get('status')}" + (f", backordered: {owed}" if owed else "")
    )
    return {"code": answer.status_code, **got}


def _line(counter: Counter, phone: str) -> dict[str, Any]:
    counter.story.step(
        "Three buyers order a phone each, fill=backorder, one after another. None is on hand: "
        "each order is BACKORDERED, its line waiting at the place its ledger entry took."
    )

    def three() -> list[dict[str, Any]]:
        return [_order(counter, user, phone, 1, fill="backorder") for user in BUYERS]

    answers, _, after = counter.around(BEFORE_AFTER, three)
    buyers = {a["orderId"]: user for a, user in zip(answers, BUYERS, strict=True)}
    lines = counter.lines(phone, buyers)
    return {
        "buyers": buyers,
        "statuses": [a["status"] for a in answers],
        "codes": [a["code"] for a in answers],
        "backordered": [sum(b["num"] for b in a.get("backordered", [])) for a in answers],
        "in_line": [buyers.get(line.flag) for line in lines],
        "owed": after.get(phone, "owed"),
    }


def _fourth(counter: Counter, phone: str) -> dict[str, Any]:
    counter.story.step(
        f"A fourth buyer: {LIMIT} phones are owed already, the limit; one more would pass it. "
        "Refused, as an order with too little stock is: nothing owed, no line."
    )
    answer, before, after = counter.around(
        BEFORE_AFTER, lambda: _order(counter, "dan", phone, 1, fill="backorder")
    )
    return {
        "code": answer["code"],
        "status": answer["status"],
        "reason": answer.get("reason"),
        "owed_moved": before.of != after.of,
    }


def _restock(counter: Counter, phone: str, buyers: dict[str, str]) -> dict[str, Any]:
    counter.story.step(
        "A restock of two phones: in its commit they go to the oldest waiting lines, one each "
        "to ann and ben; cat's line, the third, still waits. Nothing is left on hand."
    )
    body = {"delta": 2, "reason": "restock", "reference": "demo delivery"}
    counter.around(
        f"POST /stock/{short(phone)}/adjustments {{delta: 2, reason: restock}}; {BEFORE_AFTER}",
        lambda: counter.client.adjust(phone, **body).raise_for_status(),
    )
    lines = counter.lines(phone, buyers)
    flags = counter.client.stock.get(f"/flags/{lines[-1].flag}").json()
    counter.story.show(f"GET /flags/{{cat's order}}: backorders {flags.get('backorders')}")
    return {"lines": [_said(line, buyers) for line in lines], "after": counter.figures().of[phone]}


def _said(line: Line, buyers: dict[str, str]) -> dict[str, Any]:
    return {"buyer": buyers.get(line.flag), "filled": line.filled, "state": line.state}


def _confirm(counter: Counter, buyers: dict[str, str]) -> dict[str, Any]:
    counter.story.step(
        "The reconciler's pass confirms every BACKORDERED order whose lines are all filled. The "
        "scenario's stack runs no reconciler (its timing would race the story): the story runs "
        "one pass of the product's own code (as `inventory reconcile`), so the moment is fixed."
    )
    before = {user: counter.status(order_id) for order_id, user in buyers.items()}
    report = settle_pending(counter.state, counter.story)
    after = {user: counter.status(order_id) for order_id, user in buyers.items()}
    for user in BUYERS:
        counter.story.show(f"{user}'s order: {before[user]} -> {after[user]}")
    return {
        "confirmed": sorted(buyers[o] for o in report.backorders.confirmed if o in buyers),
        "before": before,
        "after": after,
    }


def _reserve(counter: Counter, case: str, units: int, ttl: int) -> dict[str, Any]:
    body = {"userId": "erin", "items": [{"goodsId": case, "num": units}], "ttlSeconds": ttl}
    answer = counter.client.order.post("/reservations", json=body)
    got: dict[str, Any] = answer.json()
    counter.story.show(
        f"POST /reservations {units} cases, ttlSeconds {ttl} -> HTTP {answer.status_code} "
        f"{got.get('state', got.get('error'))}"
    )
    return {"code": answer.status_code, **got}


def _reservation(counter: Counter, rid: str) -> dict[str, Any]:
    return dict(counter.client.order.get(f"/reservations/{rid}").json())


def _expiry(counter: Counter, case: str) -> dict[str, Any]:
    counter.story.step(
        "A reservation of two cases for 1 s, left alone: the units held (out of on hand, "
        "counted as held) until the reconciler's pass expires it and gives them back, once."
    )
    made, _, holding = counter.around(BEFORE_AFTER, lambda: _reserve(counter, case, 2, 1))
    rid = made["reservationId"]
    time.sleep(1.5)
    read = _reservation(counter, rid)
    counter.story.show(
        f"1.5 s later, GET /reservations/{{id}}: {read['state']} (a read expires nothing)"
    )
    late = counter.client.order.delete(f"/reservations/{rid}")
    counter.story.show(
        f"DELETE /reservations/{{id}} -> HTTP {late.status_code} {late.json().get('refused')}"
    )
    report, _, back = counter.around(
        f"the reconciler's pass; {BEFORE_AFTER}",
        lambda: settle_pending(counter.state, counter.story),
    )
    ended = _reservation(counter, rid)
    counter.story.show(
        f"GET /reservations/{{id}}: {ended['state']}, unitsReturned {ended.get('unitsReturned')}"
    )
    again, _, twice = counter.around(
        f"a second pass: nothing to expire, nothing returned twice; {BEFORE_AFTER}",
        lambda: settle_pending(counter.state, counter.story),
    )
    return {
        "made": made["code"],
        "held": holding.of[case],
        "read_state": read["state"],
        "late_delete": (late.status_code, late.json().get("refused")),
        "expired": rid in report.reservations.expired,
        "returned": rid in report.reservations.returned,
        "state": ended["state"],
        "units_returned": ended.get("unitsReturned"),
        "back": back.of[case],
        "again": rid in again.reservations.returned or rid in again.reservations.expired,
        "after_again": twice.of[case],
    }


def _consumed(counter: Counter, case: str) -> dict[str, Any]:
    counter.story.step(
        "A reservation turned into an order: genOrder with its reservationId makes the order "
        "of the same id, with no second deduction: on hand moves once, at the reservation."
    )
    made, _, holding = counter.around(BEFORE_AFTER, lambda: _reserve(counter, case, 1, 600))
    rid = made["reservationId"]
    order, _, after = counter.around(
        BEFORE_AFTER, lambda: _order(counter, "erin", case, 1, reservationId=rid)
    )
    flows = counter.client.flows(rid)
    counter.story.show(
        f"the order's id is the reservation's: {order.get('orderId') == rid}; stock flows of "
        f"the flag: {len(flows)}; the reservation: {_reservation(counter, rid)['state']}"
    )
    return {
        "made": made["code"],
        "status": order["status"],
        "same_id": order.get("orderId") == rid,
        "flows": len(flows),
        "held": holding.of[case],
        "after": after.of[case],
        "state": _reservation(counter, rid)["state"],
    }


def _verdict(facts: dict[str, Any], checks: list[Any]) -> ScenarioResult:
    line, fourth, restock, a_pass = (facts[k] for k in ("line", "fourth", "restock", "pass"))
    expired, consumed = facts["expired"], facts["consumed"]
    states = [(x["buyer"], x["filled"], x["state"]) for x in restock["lines"]]
    ok = (
        line["statuses"] == ["BACKORDERED"] * 3
        and line["in_line"] == list(BUYERS)
        and line["owed"] == LIMIT
        and (fourth["code"], fourth["status"], fourth["owed_moved"]) == (409, "FAILED", False)
        and states == [("ann", 1, "filled"), ("ben", 1, "filled"), ("cat", 0, "waiting")]
        and a_pass["confirmed"] == ["ann", "ben"]
        and a_pass["after"] == {"ann": "CONFIRMED", "ben": "CONFIRMED", "cat": "BACKORDERED"}
        and (expired["held"]["num"], expired["held"]["held"]) == (3, 2)
        and expired["read_state"] == "held"
        and expired["expired"]
        and expired["returned"]
        and not expired["again"]
        and (expired["back"]["num"], expired["back"]["held"]) == (5, 0)
        and expired["after_again"] == expired["back"]
        and (consumed["status"], consumed["same_id"], consumed["flows"]) == ("CONFIRMED", True, 1)
        and consumed["after"]["num"] == consumed["held"]["num"] == 4
        and not facts["violated"]
    )
    verdict = (
        f"three buyers in line within a limit of {LIMIT}, a fourth refused; a restock of 2 "
        "filled the two oldest, the pass confirmed exactly those, the third still waits; a "
        "reservation expired by the pass gave its 2 units back once; one consumed deducted once"
    )
    return ScenarioResult("backorders", ok, verdict if ok else "FAILED: " + verdict, checks, facts)
