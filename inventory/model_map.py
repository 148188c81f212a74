"""Each action of the protocol's model (model/protocol.pml), and the function of the code that
does it: the map docs/model.md prints, kept apart from the runner (inventory/model_check.py)."""

from __future__ import annotations

# tests/unit/test_model_map.py imports each, so a rename or a removal in the code shows up here.
ACTIONS: dict[str, str] = {
    "pre-filter: is the flag live in Redis": (
        "stock_service.deduction.steps.StockDeduction.flag_live"
    ),
    "answer a flag not in Redis from the database": (
        "stock_service.deduction.steps.StockDeduction.reduce"
    ),
    "take the lock, with a token per name": (
        "coordination.locks.zookeeper.claim.ZooKeeperClaim.wait"
    ),
    "the token of a held name": "coordination.locks.base.Lease.token_for",
    "read the level, the row's fence and the decided flags": (
        "stock_service.storage.store.StockStore.read_batch"
    ),
    "plan: decide each request against the running level": "stock_service.core.plan.plan",
    "fence compare-and-set on the stock row": (
        "stock_service.storage.store.StockWrite.set_level_fenced"
    ),
    "fence refused (newer holder) or overtaken (older holder)": (
        "stock_service.deduction.decide._write_levels"
    ),
    "read again after overtaken or a unique violation": (
        "stock_service.deduction.decide.decide_batch"
    ),
    "insert the flow rows (unique flag, goods id)": (
        "stock_service.storage.store.StockWrite.add_flows"
    ),
    "insert the decision rows (primary key flag)": (
        "stock_service.storage.store.StockWrite.add_decisions"
    ),
    "void a flag (no lock; the key orders it)": "stock_service.storage.store.StockStore.void",
    "forget decided flags in Redis": "stock_service.deduction.steps.StockDeduction.forget_flags",
    "second part of a split batch, same claim": (
        "stock_service.deduction.holds.BatchRunner._serve_rest"
    ),
    "place an order: PENDING, flag, calls, outcome": "order_service.placing.flow.OrderFlow.place",
    "write the flag": "order_service.placing.batching.OrderBatches.write_flags",
    "write the flag again after unknown_flag": (
        "order_service.placing.batching.OrderBatches.call_stock"
    ),
    "read the flows after an unclear answer": "order_service.placing.flow.OrderFlow.poll_flows",
    "the buyer's void of an unknown outcome": "order_service.placing.flow.OrderFlow.settle_unknown",
    "finish: compare-and-set from PENDING, answer from the row": (
        "order_service.storage.transitions.finish"
    ),
    "a decision becomes a status": "order_service.core.fills.FillPolicy.decided",
    "pay a hold": "order_service.storage.transitions.pay",
    "record a refusal for lack of stock: a decision row refused (primary key flag)": (
        "stock_service.storage.store.StockWrite.add_decisions"
    ),
    "plan a return: of a deducted flag, the level up by its quantity": (
        "stock_service.core.plan.plan"
    ),
    "cancel: CONFIRMED -> CANCELLING (compare-and-set), then the return": (
        "order_service.placing.cancellation.Cancellation.cancel"
    ),
    "the return answered: CANCELLING -> CANCELLED (compare-and-set)": (
        "order_service.placing.cancellation.Cancellation.return_stock"
    ),
    "return a flag's stock: no decision, voided; deducted, to the lock": (
        "stock_service.deduction.steps.StockDeduction.cancel"
    ),
    "the decision's compare-and-set deducted -> returned": (
        "stock_service.storage.store.StockWrite.mark_returned"
    ),
    "fenced write: the row's fence and its ledger seq as read": (
        "stock_service.storage.store.StockWrite.set_level_fenced"
    ),
    "an adjustment: to the lock, batched with the orders' requests": (
        "stock_service.deduction.steps.StockDeduction.adjust"
    ),
    "plan an adjustment: a count stale unless the level is the one expected": (
        "stock_service.core.plan._adjust"
    ),
    "write the adjustment's ledger row": "stock_service.storage.store.StockWrite.add_adjustments",
    "reconciler elected, with a token": "coordination.election.ZooKeeperElector.campaign",
    "reconciler: still the leader before a pass": (
        "coordination.election.ZooKeeperElector.is_leader"
    ),
    "reconciler settles one PENDING order": "order_service.settling.reconcile.settle_one",
    "reconciler: the flag's decision first (GET /flags)": (
        "order_service.placing.client.StockClient.decision"
    ),
    "reconciler: undecided, the flag written again and deducted again under it": (
        "order_service.settling.reconcile.DeductAgain.settle"
    ),
    "reconciler fence advance and status compare-and-set": "order_service.storage.transitions.move",
    "a refused (superseded) reconciler stands down": "order_service.settling.reconciler.lead",
    "reconciler: pass after pass, each while still the leader": (
        "order_service.settling.reconciler.lead"
    ),
    "reconciler: undecided past RECONCILE_VOID_AFTER, the flag voided (PUT /voidFlag)": (
        "order_service.placing.client.StockClient.void"
    ),
    "the status compare-and-set with the deadline by the order database's clock (pay, expiry)": (
        "order_service.storage.store.OrderWrite.compare_and_set"
    ),
    "expiry: the holds past their deadline, and the CANCELLING orders, paged": (
        "order_service.settling.reconcile.reconcile"
    ),
    "expiry: AWAITING -> CANCELLING past the deadline (compare-and-set), then the return": (
        "order_service.placing.cancellation.Cancellation.expire"
    ),
    "a return asked again (a CANCELLING order; a cancel finding it CANCELLING)": (
        "order_service.placing.cancellation.Cancellation.return_stock"
    ),
    "a return's decision read under the lock: returned before, the same answer": (
        "stock_service.core.plan.plan"
    ),
}

# The locations' model (model/locations.pml): each of its actions, and the function of the code
# that does it. tests/unit/test_model_locations.py imports each. The transfer's actions (its
# step under the lock, the state's compare-and-set, the leg and reference keys) and the
# locations' level and allocation rows are mapped once their code is in.
LOCATION_ACTIONS: dict[str, str] = {
    "take the lock on the goods ids of a request, with a token per name": (
        "coordination.locks.zookeeper.claim.ZooKeeperClaim.wait"
    ),
    "a batch's requests decided in turn on the levels the ones before left": (
        "stock_service.core.plan.plan"
    ),
    "allocate: the rule on the levels read under the lock": (
        "stock_service.core.allocation.allocate"
    ),
    "the whole order from one location, the best priority that fills it": (
        "stock_service.core.allocation._one_for_all"
    ),
    "each line from one location, the fewest locations for the order": (
        "stock_service.core.allocation._fewest_locations"
    ),
    "a line split by priority, only when no single location fills it": (
        "stock_service.core.allocation._split"
    ),
    "fenced write on X's row: its fence and its ledger seq as read": (
        "stock_service.storage.store.StockWrite.set_level_fenced"
    ),
    "fence refused (newer holder) or overtaken (older holder)": (
        "stock_service.deduction.decide._write_levels"
    ),
    "read again and decide again after overtaken or a key met": (
        "stock_service.deduction.decide.decide_batch"
    ),
    "an order's lines allocated in the plan, all or nothing or partial": (
        "stock_service.core.allocating.deduct"
    ),
    "the locations' levels read under the lock": "stock_service.storage.location_store.read_levels",
    "the locations' levels written in the fenced commit": (
        "stock_service.storage.location_store.write_named"
    ),
    "a transfer's step under the lock (taken before: as it is; cannot be taken: 409)": (
        "stock_service.core.transfers.step"
    ),
    "the transfer's state read under the lock": (
        "stock_service.storage.location_store.read_transfers"
    ),
    "the state compare-and-set, the unique leg and the unique reference in the commit": (
        "stock_service.storage.location_store.write_moves"
    ),
    "the transfer routes": "stock_service.api.transfers.transfer_routes",
}

# The backorders' and reservations' model (model/backorders.pml): each of its actions, and the
# function of the code that does it. tests/unit/test_model_backorders.py imports each.
BACKORDER_ACTIONS: dict[str, str] = {
    "take the goods id's lock, with a token": (
        "coordination.locks.zookeeper.claim.ZooKeeperClaim.wait"
    ),
    "read on hand, the row's fence and seq, the limit, the units owed and the waiting lines": (
        "stock_service.storage.store.StockStore.read_batch"
    ),
    "the waiting lines, read under the lock oldest first": (
        "stock_service.storage.backorder_store.read_waiting"
    ),
    "a batch's requests decided in turn on the running levels and lines": (
        "stock_service.core.plan.plan"
    ),
    "a deduction: what is on hand handed to the waiting lines first": (
        "stock_service.core.backordering.serve_waiting"
    ),
    "the rest backordered within the limit, else refused": (
        "stock_service.core.backordering.try_backorder"
    ),
    "the cap: the units owed stay within the limit": (
        "stock_service.core.backorders.Backorders.room"
    ),
    "a line naming a location owes within that location's limit and the goods id's": (
        "stock_service.core.backorders.Backorders.bound"
    ),
    "units at a location to the oldest waiting line naming it or none": (
        "stock_service.core.backordering.serve_waiting"
    ),
    "a location's limit, read with the hold for the lines naming a location": (
        "stock_service.storage.backorder_store.read_location_limits"
    ),
    "a line waits at the ledger seq of its backordered entry": (
        "stock_service.core.backorders.Backorders.wait"
    ),
    "arriving units to the oldest waiting line first, a line filled in parts": (
        "stock_service.core.backorders.Backorders.serve"
    ),
    "a restock: an adjustment to the lock, its unit served to the lines in its commit": (
        "stock_service.deduction.steps.StockDeduction.adjust"
    ),
    "a cancel reads what its flag has before the lock": (
        "stock_service.storage.store.StockStore.returning"
    ),
    "a cancel of a backordered flag reads what it has again under the lock": (
        "stock_service.deduction.decide.as_of_the_hold"
    ),
    "the cancel's read again: in the hold's own read, after the goods row's fence and seq": (
        "stock_service.storage.store.StockStore.read_batch"
    ),
    "a cancel: what was filled back, the place given up, the next line served": (
        "stock_service.core.backordering.give_back"
    ),
    "a line gives up its place": "stock_service.core.backorders.Backorders.give_up",
    "fenced write on the goods row: its fence and its ledger seq as read": (
        "stock_service.storage.store.StockWrite.set_level_fenced"
    ),
    # GATE_ONLY_CHANGED_LEVELS removes this: only a plan with a ledger line met the fence.
    "every hold's commit through the gate, whatever its plan writes": (
        "stock_service.deduction.decide._write_levels"
    ),
    "the gate of a plan with no ledger line (a refusal, a give-up of nothing): fence moved": (
        "stock_service.storage.store.StockWrite.pass_gate"
    ),
    "the lines, their fills and the units owed written in the fenced commit": (
        "stock_service.storage.backorder_store.write_backorders"
    ),
    "a line read waiting, moved since: its compare-and-set matches nothing, read again": (
        "stock_service.storage.backorder_store.write_backorders"
    ),
    "the row's units owed moved by what the plan moved them": (
        "stock_service.storage.backorder_store.write_backorders"
    ),
    "a newer holder's fence read: stale, nothing written": (
        "stock_service.deduction.decide._refuse_if_newer"
    ),
    "fence refused (newer holder) or overtaken (older holder)": (
        "stock_service.deduction.decide._overtaken_if_moved"
    ),
    "read again and decide again after overtaken or a line moved": (
        "stock_service.deduction.decide.decide_batch"
    ),
    "the return of a reservation's flag: to the lock, under the fence": (
        "stock_service.deduction.steps.StockDeduction.cancel"
    ),
    "the flag's decision compare-and-set deducted -> returned": (
        "stock_service.storage.store.StockWrite.mark_returned"
    ),
    "the reconciler elected, with a token": "coordination.election.ZooKeeperElector.campaign",
    "the reconciler: pass after pass, each while still the leader": (
        "order_service.settling.reconciler.lead"
    ),
    "POST /reservations: its flag deducted held, then the row held": (
        "order_service.reservations.holds.Reservations.reserve"
    ),
    "a move from held: the state's compare-and-set in its own transaction": (
        "order_service.reservations.store.compare_and_set"
    ),
    "a move with its deadline by the order database's clock (due)": (
        "order_service.reservations.store.ReservationStore.move"
    ),
    "consume: held -> consumed before the deadline, and the order, one transaction": (
        "order_service.reservations.orders.ReservationOrders.consume"
    ),
    "a genOrder's repeat finding it consumed by its own key answers that order": (
        "order_service.reservations.orders.ReservationOrders.place"
    ),
    "DELETE: held -> released, then the return": (
        "order_service.reservations.holds.Reservations.release"
    ),
    "the return of a released or expired reservation asked of the stock service": (
        "order_service.reservations.holds.Settlement.give_back"
    ),
    "returned_at set once the return is answered": (
        "order_service.reservations.store.ReservationStore.returned"
    ),
    "expiry: held -> expired past the deadline, then the return; an owing one asked again": (
        "order_service.settling.reservations.reconcile_reservations"
    ),
    "the reservation routes": "order_service.api.reservations.reservation_routes",
}

# The reservations' actions whose code is not in yet: the names proposed for them (those of the
# order service's reservations as they are being written). Not imported by any test; moved to
# BACKORDER_ACTIONS when the code lands.
# Actions of the model whose code is still to come (none now: the reservations landed).
PENDING_BACKORDER_ACTIONS: dict[str, str] = {}
