"""POST /genOrder's steps for a batch of orders. The orders of one process that arrive while a
batch is in flight form the next (coordination/combining.py: a lone order goes at once; under
a steady load a leader may wait up to ORDER_BATCH_WAIT_MS for companions), and one of their
request threads runs the article's steps for all of them:

    create the orders PENDING (one transaction) -> write their flags (one Redis pipeline) ->
    deduct (a stock call carrying every flag: PUT /reduceStock, cut into several under
    ORDER_BATCH_BYTES, order_service/placing/batch_call.py; a lone order takes the article's
    PUT /reduceStock/{flag}) -> finish (one transaction of compare-and-sets)

While a batch is in its stock call, the next forms and writes its orders and flags (two
groups: placing/turn.py). Each order keeps every step and guarantee of its own (its PENDING row
committed before its flag is written, its flag, lines, decision and rows under the lock, its
answer made from its row); the batch shares the cost: a commit, a round trip, an HTTP request,
a lock hold. An order whose outcome the batch could not learn (no answer, a `duplicate`
without rows) goes back to its own request's thread, which polls the stock flow and voids as a
lone order would (order_service/placing/flow.py): the slow path never holds up a batch.

The batch's transaction also judges the flash-sale rules per buyer (docs/buyer-limits.md) under
each buyer's row lock, its members in order: a member refused is written FAILED in it, and
answered 409 at once with no flag and no stock call; the others go on as if it never came.

A batch's orders are written only once it runs: a request queued past its patience is
answered 503 with nothing written, so an order's age (the reconciler's rule) starts with it.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence

from sqlalchemy.exc import IntegrityError

from coordination.combining import BatchHandle, Combiner
from order_service.core.buyer_limits import LimitRefusal
from order_service.core.fills import ALL, Fill
from order_service.core.model import OrderState
from order_service.core.statuses import FAILED, OUTCOME_UNKNOWN, PENDING, REDIS_UNAVAILABLE
from order_service.placing.batch_call import reduce_many
from order_service.placing.batch_results import BatchResult, KeyTaken, Placed, concluded
from order_service.placing.client import StockAnswer, StockClient
from order_service.placing.flags import FlagWriter
from order_service.placing.turn import StockTurns
from order_service.storage import transitions
from order_service.storage.buyer_limits import BuyerRules, counted
from order_service.storage.store import OrderStore
from order_service.storage.transitions import Finish, NewOrder
from shared.config.settings import FLAG_WRITES
from shared.contract import Outcome
from shared.metrics import ORDER_BATCH_SIZE, ORDERS

log = logging.getLogger(__name__)
LANE = "orders"  # one lane per process: a batch takes whatever queued behind the one before

Item = NewOrder


class OrderBatches:
    def __init__(
        self,
        store: OrderStore,
        flags: FlagWriter,
        stock: StockClient,
        batch_max: int,
        companion_wait: float = 0.0,
        rules: BuyerRules | None = None,
    ) -> None:
        self.store = store
        self.rules = rules
        self.flags = flags
        self.stock = stock
        self.turns = StockTurns()
        self.combiner: Combiner[Item, BatchResult] = Combiner(
            self.run_batch, batch_max, companion_wait
        )

    def submit(self, order: NewOrder, patience: float) -> BatchResult:
        """Place one order in the next batch; LockTimeout (nothing written) if it queued for
        longer than `patience` seconds."""
        return self.combiner.submit(LANE, order, patience)

    def run_batch(
        self, _key: Hashable, items: Sequence[Item], handle: BatchHandle[Item, BatchResult]
    ) -> list[BatchResult]:
        """One batch; the next forms during its stock call (placing/turn.py), and in trouble (a
        flag write or a stock call to try again) batches run side by side."""
        orders = list(items)
        ORDER_BATCH_SIZE.observe(len(orders))
        created, taken, refused = self.create(orders)
        results: dict[str, BatchResult] = {o.order_id: KeyTaken() for o in taken}
        for order_id, refusal in refused.items():  # final: no flag, no stock call
            failed = OrderState(order_id, FAILED, refusal.text())
            ORDERS.labels(FAILED, refusal.reason).inc()
            results[order_id] = Placed(failed, refusal.reason, batch=len(orders))
        if created:
            results.update(self.place(created, handle.detach))
        return [results[order.order_id] for order in orders]

    def create(
        self, orders: list[NewOrder]
    ) -> tuple[list[NewOrder], list[NewOrder], dict[str, LimitRefusal]]:
        """Step 3: the orders PENDING, in one transaction, those the flash-sale rules per buyer
        refuse written FAILED in it (storage/buyer_limits.py). A repeated Idempotency-Key fails
        it whole: then each is written alone, and those whose key is taken are set aside.
        The orders to place, those set aside, and the refusals by order id."""
        try:
            refused = transitions.create_pending_many(self.store, orders, self.rules)
            counted(refused)
            return [o for o in orders if o.order_id not in refused], [], refused
        except IntegrityError:
            if len(orders) == 1 and orders[0].idempotency_key:
                return [], orders, {}  # two submits with one key raced; the unique key chose
            if len(orders) == 1:
                raise
        created, taken, refused = [], [], {}
        for order in orders:
            try:
                alone = transitions.create_pending_many(self.store, [order], self.rules)
            except IntegrityError:
                if not order.idempotency_key:
                    raise
                taken.append(order)
                continue
            counted(alone)
            refused.update(alone)
            if order.order_id not in alone:
                created.append(order)
        return created, taken, refused

    def place(
        self,
        orders: list[NewOrder],
        in_trouble: Callable[[], None] = lambda: None,
    ) -> dict[str, BatchResult]:
        """Steps 4-7 for orders written PENDING: their flags, the stock call, the finish."""
        ids = [order.order_id for order in orders]
        if not self.write_flags(ids, in_trouble):
            # No flag, so no stock call: nothing was deducted. PENDING, not FAILED: the
            # reconciler writes the flag and deducts once Redis is back (no sale lost to it).
            why = f"{OUTCOME_UNKNOWN}: {REDIS_UNAVAILABLE}, the flag was not written"
            return self.finish([Finish(i, PENDING, why) for i in ids], "redis", len(ids))
        wanted = {order.order_id: order.lines for order in orders}
        holds = frozenset(order.order_id for order in orders if order.pay_within)
        fills = {order.order_id: order.fill for order in orders if not order.fill.plain}
        with self.turns.taken(in_trouble) as in_trouble_calling:  # two groups: placing/turn.py
            answers = self.call_stock(wanted, in_trouble_calling, holds, fills)
        return self.conclude(orders, answers)

    def place_alone(self, order: NewOrder) -> BatchResult:
        """An order its batch's call answered `not_attempted` (its lock not had within the
        call's budget): sent again alone, on the article's route, in its own request's thread
        (its order and flag are written already), which waits for its lock as long as a lone
        order's call does, while its batch's other orders have their answers."""
        fill = {order.order_id: order.fill} if not order.fill.plain else {}
        holds = frozenset({order.order_id}) if order.pay_within else frozenset()
        answers = self.call_stock({order.order_id: order.lines}, holds=holds, fills=fill)
        return self.conclude([order], answers)[order.order_id]

    def conclude(
        self, orders: list[NewOrder], answers: Mapping[str, StockAnswer]
    ) -> dict[str, BatchResult]:
        """Step 7: what each answer makes of its order, the known outcomes finished in one
        transaction (placing/batch_results.py)."""
        finishes, results = concluded(orders, answers)
        results.update(self.finish(finishes, batch=len(orders)))
        return results

    def write_flags(
        self, order_ids: list[str], in_trouble: Callable[[], None] = lambda: None
    ) -> bool:
        """Step 4, the operation flags, one pipeline for the batch (placing/flags.py)."""
        return self.flags.write(order_ids, in_trouble)

    def call_stock(
        self,
        wanted: dict[str, dict[str, int]],
        in_trouble: Callable[[], None] = lambda: None,
        holds: frozenset[str] = frozenset(),
        fills: Mapping[str, Fill] | None = None,
    ) -> dict[str, StockAnswer]:
        """Step 5, reduceStock with the same flags throughout (retries included); a flag the
        stock service does not know (Redis lost it) is written again and asked again, once.
        `holds`: the flags of holds, whose units stay held until paid; `fills`: the flags of
        orders that asked for a fill or a location, and what they asked."""
        fills = fills or {}
        answers = self._reduce(wanted, in_trouble, holds, fills)
        for _ in range(FLAG_WRITES - 1):
            lost = [f for f, a in answers.items() if a.outcome == Outcome.UNKNOWN_FLAG]
            if not lost:
                break
            in_trouble()
            if not self.write_flags(lost):
                break
            log.warning("the stock service does not know %d flags: written again", len(lost))
            again = self._reduce({flag: wanted[flag] for flag in lost}, in_trouble, holds, fills)
            for flag, answer in again.items():
                answer.attempts += answers[flag].attempts
                answers[flag] = answer
        return answers

    def _reduce(
        self,
        wanted: dict[str, dict[str, int]],
        in_trouble: Callable[[], None],
        holds: frozenset[str],
        fills: Mapping[str, Fill],
    ) -> dict[str, StockAnswer]:
        if len(wanted) == 1:  # a lone order: the article's route
            [(flag, lines)] = wanted.items()
            fill = fills.get(flag, ALL)
            return {
                flag: self.stock.reduce_stock(flag, lines, in_trouble, flag in holds, fill=fill)
            }
        return reduce_many(self.stock, wanted, in_trouble, holds, fills)

    def finish(
        self, finishes: list[Finish], unavailable: str | None = None, batch: int = 1
    ) -> dict[str, BatchResult]:
        """Step 7 for the orders whose outcome is known: one transaction; each answered from
        its row as it ended."""
        if not finishes:
            return {}
        states = transitions.finish_many(self.store, finishes)
        results: dict[str, BatchResult] = {}
        ended: Counter[str] = Counter()
        for f in finishes:
            state = states[f.order_id]
            code = (f.reason or "").split(":")[0] or None
            if state.status == f.status:
                ORDERS.labels(f.status, code or "none").inc()
                ended[f.status] += 1
                results[f.order_id] = Placed(
                    state, code, unavailable, f.shortfalls, batch, f.confirmed
                )
            else:  # settled or cancelled meanwhile: the row says what it became
                results[f.order_id] = Placed(state, batch=batch)
        log.info(
            "batch of %d orders: %s; %s",
            len(finishes),
            dict(ended),
            " ".join(f.order_id for f in finishes),
        )
        return results
