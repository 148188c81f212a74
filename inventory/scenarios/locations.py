"""`inventory demo locations`: stock in more than one place (docs/locations.md), on a stack of
its own, each step with the levels per location before and after it.

1. Two locations besides `default`: north (priority 1) and south (priority 2); the goods ids
   are seeded at them (`default`, the total less the named levels, keeps 0).
2. An order one location can fill: north is first but has no case, south has the phone and the
   case: the whole order from south, not a line from each.
3. An order no location can fill: 3 phones, 2 at north and 2 at south: the line is split, by
   priority, 2 from north and 1 from south.
4. A partial fill: 2 phones and a case with 1 of each left: the order is confirmed with what
   there was; after a restock, its flag sent again deducts nothing (the unfilled part stays a
   refusal, I9).
5. A transfer of 3 phones from north to south: sent (in transit, in no location), the POST
   repeated (the same transfer, nothing moved again), received, the receive repeated (nothing
   moved), a cancel after it refused.
The invariants (I1-I9) and the locations' (L1-L4) are checked at the end.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from rich.console import Console

from inventory.check import print_results
from inventory.check.locations import check_locations, read_places
from inventory.local import stack_state
from inventory.local.client import StackClient
from inventory.scenarios.rig import ScenarioResult, Story, finish, scenario_stack
from inventory.scenarios.shelves import Shelf, history_table, rule_facts, rule_held, short
from shared.database.engines import make_engine

# Best first: `default` always exists (priority 0), the two named here come after it.
PLACES = ("default", "north", "south")
PRIORITIES = {"north": 1, "south": 2}
BEFORE_AFTER = "the levels, before -> after:"


def locations(console: Console | None = None) -> ScenarioResult:
    story = Story(console)
    prefix = f"sc-loc-{uuid.uuid4().hex[:6]}-"
    with scenario_stack("locations") as state:
        client = StackClient(state)
        shelf = Shelf(client, story, prefix, PLACES)
        try:
            _set_up(shelf)
            facts: dict[str, Any] = {"whole": _whole(shelf), "split": _split(shelf)}
            facts["partial"] = _partial(shelf)
            facts["transfer"] = _transfer(shelf)
            story.step(f"The ledger of {short(shelf.phone)}: why its levels are what they are.")
            entries = client.history(shelf.phone, limit=12).get("entries", [])
            story.show(f"GET /stock/{short(shelf.phone)}/history")
            shelf.show(history_table(entries))
            facts["levels"] = shelf.levels().at
            story.step(
                "The checks: the invariants (I1-I9, as `inventory check`), then the locations' "
                "(L1-L4: inventory/check/locations.py)."
            )
            checks = finish(state, story, prefix) + location_checks(state, story, prefix)
        finally:
            client.close()
    return _verdict(facts, checks)


def _set_up(shelf: Shelf) -> None:
    shelf.story.step(
        "Two locations besides default (priority 0, always there): north and south, lower "
        "priority first. The goods ids are seeded at them; default's level is derived (the "
        "total less the named locations), 0 here."
    )
    for place, priority in PRIORITIES.items():
        put = shelf.client.stock.put(f"/locations/{place}", json={"priority": priority})
        shelf.story.show(f'PUT /locations/{place} {{"priority": {priority}}} -> {put.status_code}')
    listed = shelf.client.stock.get("/locations").json()["locations"]
    shelf.story.show(
        "GET /locations: "
        + ", ".join(f"{p['locationId']} ({p['priority']})" for p in listed if p["active"])
    )
    seeds = {shelf.phone: {"north": 2, "south": 4}, shelf.case: {"north": 0, "south": 2}}

    def seed() -> None:
        for goods_id, levels in seeds.items():
            for place, num in levels.items():
                put = shelf.client.stock.put(
                    f"/stock/{goods_id}/locations/{place}", json={"num": num}
                )
                put.raise_for_status()

    shelf.around("PUT /stock/{goodsId}/locations/{locationId}: the seeds", seed)


def _allocated_order(shelf: Shelf, user: str, lines: dict[str, int]) -> dict[str, Any]:
    answer, before, _after = shelf.around(BEFORE_AFTER, lambda: shelf.order(user, lines))
    facts = rule_facts(lines, PLACES, before, answer.get("allocations") or [])
    facts["status"] = answer["status"]
    return facts


def _whole(shelf: Shelf) -> dict[str, Any]:
    shelf.story.step(
        "An order one location can fill: 2 phones and a case. north comes first but has no "
        "case; south has both, so the whole order comes from south (not a line from each)."
    )
    facts = _allocated_order(shelf, "alice", {shelf.phone: 2, shelf.case: 1})
    split = ", ".join(short(g) for g in facts["split"]) or "none"
    shelf.story.show(
        f"locations that could fill the whole order: {', '.join(facts['one_for_all'])}; taken "
        f"from {', '.join(facts['locations'])}; lines split: {split}"
    )
    return facts


def _split(shelf: Shelf) -> dict[str, Any]:
    shelf.story.step(
        "An order no location can fill: 3 phones, with 2 at north and 2 at south. The line is "
        "split, by priority: what north has, then the rest from south."
    )
    facts = _allocated_order(shelf, "bob", {shelf.phone: 3})
    shelf.story.show(
        f"locations that could fill the line: {', '.join(facts['fits'][shelf.phone]) or 'none'};"
        f" lines split: {', '.join(short(g) for g in facts['split'])}"
    )
    return facts


def _partial(shelf: Shelf) -> dict[str, Any]:
    shelf.story.step(
        "A partial fill: 2 phones and a case, fill=partial, with 1 phone and 1 case left. The "
        "order is confirmed with what there is; the unfilled phone is refused, for good."
    )
    lines = {shelf.phone: 2, shelf.case: 1}
    answer, _before, _after = shelf.around(
        BEFORE_AFTER, lambda: shelf.order("carol", lines, fill="partial")
    )
    filled = {i["goodsId"]: i["filled"] for i in answer.get("items", [])}
    shelf.story.show(
        f"filled: {', '.join(f'{short(g)} {n} of {lines[g]}' for g, n in filled.items())}; "
        f"shortfalls (requested, filled): "
        + ", ".join(
            f"{short(x['goodsId'])} {x['requested']}, {x['available']}"
            for x in answer.get("shortfalls", [])
        )
    )
    order_id = answer["orderId"]
    restock = {"delta": 5, "reason": "restock", "location": "north", "reference": "demo delivery"}
    shelf.around(
        "a restock at north: POST /stock/{phone}/adjustments {delta: 5, location: north}",
        lambda: shelf.client.adjust(shelf.phone, **restock).raise_for_status(),
    )
    body = [{"goodsId": g, "goodsNum": n} for g, n in lines.items()]
    retry, before, after = shelf.around(
        "carol's flag sent again, after the restock: PUT /reduceStock/{flag}?fill=partial",
        lambda: shelf.client.stock.put(
            f"/reduceStock/{order_id}", params={"fill": "partial"}, json=body
        ).json(),
    )
    shelf.story.show(
        f"-> outcome {retry['outcome']}: the flag was decided once, and no later attempt "
        "deducts what it left unfilled"
    )
    row = shelf.client.order_row(order_id)
    return {
        "status": answer["status"],
        "filled": filled,
        "lines": lines,
        "retry": retry["outcome"],
        "retry_moved": before.at != after.at,
        "still_filled": {i["goodsId"]: i.get("filled") for i in row.get("items", [])},
    }


def _transfer(shelf: Shelf) -> dict[str, Any]:
    shelf.story.step(
        "A transfer of 3 phones from north to south: the out leg takes them from north (in "
        "transit, in no location, the total down by 3), the in leg puts them in south."
    )
    client, phone = shelf.client, shelf.phone
    reference = f"demo-{uuid.uuid4().hex[:8]}"
    body = {"goodsId": phone, "from": "north", "to": "south", "units": 3, "reference": reference}
    codes: dict[str, Any] = {}

    def call(name: str, path: str, json: Any = None) -> dict[str, Any]:
        answer = client.stock.post(path, json=json)
        got: dict[str, Any] = answer.json()
        codes[name] = answer.status_code
        shown = re.sub(r"^/transfers/[^/]+/", "/transfers/{id}/", path)
        said = f" ({body['units']} phones, {body['from']} to {body['to']})" if json else ""
        shelf.story.show(
            f"POST {shown}{said} -> HTTP {answer.status_code} "
            f"{got.get('state') or got.get('error')}"
        )
        return got

    sent, _, in_transit = shelf.around(BEFORE_AFTER, lambda: call("sent", "/transfers", body))
    tid = sent["transferId"]
    shelf.story.show("the same POST again (same reference, same body): nothing moves again")
    again, _, _ = shelf.around(BEFORE_AFTER, lambda: call("repeat", "/transfers", body))
    shelf.story.show("the units arrive at south: the in leg")
    _, _, received = shelf.around(
        BEFORE_AFTER, lambda: call("receive", f"/transfers/{tid}/receive")
    )
    shelf.story.show("the receive sent again (a retry): the transfer as it is, nothing moved")
    _, _, twice = shelf.around(
        BEFORE_AFTER, lambda: call("receive_again", f"/transfers/{tid}/receive")
    )
    shelf.story.show("a cancel after the receive: refused, nothing moved")
    call("cancel_after", f"/transfers/{tid}/cancel")
    kinds = [
        e["kind"]
        for e in client.history(phone, limit=50).get("entries", [])
        if e.get("transferId") == tid
    ]
    shelf.story.show(f"the ledger's entries of the transfer: {kinds}")
    return {
        **codes,
        "same_transfer": again.get("transferId") == tid,
        "in_transit": in_transit.in_transit[phone],
        "after_receive": received.at[phone],
        "after_receive_again": twice.at[phone],
        "transit_after": twice.in_transit[phone],
        "legs": {k: kinds.count(k) for k in ("transfer_out", "transfer_in")},
    }


def location_checks(state: stack_state.StackState, story: Story, prefix: str) -> list[Any]:
    engine = make_engine(state.stock_database_url)
    try:
        checks = check_locations(read_places(engine, prefix))
    finally:
        engine.dispose()
    if story.console:
        print_results(checks, story.console)
    return checks


def _verdict(facts: dict[str, Any], checks: list[Any]) -> ScenarioResult:
    whole, split, partial, moved = (facts[k] for k in ("whole", "split", "partial", "transfer"))
    phone = next(iter(partial["lines"]))
    ok = (
        whole["status"] == "CONFIRMED"
        and split["status"] == "CONFIRMED"
        and rule_held(whole)
        and rule_held(split)
        and not whole["split"]
        and split["split"] == [phone]
        and partial["status"] == "CONFIRMED"
        and partial["filled"][phone] < partial["lines"][phone]
        and partial["retry"] == "duplicate"
        and not partial["retry_moved"]
        and partial["still_filled"] == partial["filled"]
        and (moved["sent"], moved["repeat"], moved["receive"], moved["receive_again"])
        == (201, 200, 200, 200)
        and moved["same_transfer"]
        and moved["after_receive"] == moved["after_receive_again"]
        and moved["transit_after"] == 0
        and moved["legs"] == {"transfer_out": 1, "transfer_in": 1}
        and moved["cancel_after"] == 409
        and all(c.ok for c in checks)
    )
    verdict = (
        f"the order one location could fill came whole from {', '.join(whole['locations'])}; "
        f"the line none could fill was split ({', '.join(split['locations'])}); a partial order "
        f"confirmed with {sum(partial['filled'].values())} of {sum(partial['lines'].values())} "
        f"units, its flag sent again after a restock: {partial['retry']}; 3 units sent, in "
        "transit, received once for two receives"
    )
    return ScenarioResult("locations", ok, verdict if ok else "FAILED: " + verdict, checks, facts)
