"""The unfenced baseline (FENCING=false, LOCK_BACKEND=none) with backorders, on SQLite,
PostgreSQL and MariaDB: a holder whose seqs moved on while it paused renumbers its lines, and
a waiting line's row names its ledger line by `position`, not `seq` (it used to raise KeyError
there, so a baseline run with fill=backorder failed where it should show its lost update)."""

from __future__ import annotations

import sqlalchemy as sa

from coordination.locks import Lease
from shared.contract import Outcome
from shared.database.engines import make_engine
from stock_service.core.plan import Request
from stock_service.deduction.decide import decide_batch
from stock_service.ledger.history import Ledger
from stock_service.storage.store import StockStore
from stock_service.storage.tables import backorder, stock_flow
from tests.conftest import unique
from tests.helpers import PauseAt
from tests.integration.test_fencing import seeded


def test_a_backorder_whose_seqs_moved_while_it_paused_is_written_unfenced(
    database_url: str,
) -> None:
    engine = make_engine(database_url)
    try:
        store = StockStore(engine)
        goods = seeded(store, 1)  # seq 1: the seed
        assert Ledger(engine).set_backorder_limit(goods, 5)
        none = Lease(tokens={goods: None})  # LOCK_BACKEND=none: no token, no fence
        other = unique("flag")
        # While the backorder has read (level 1, seq 1) and paused, another buyer's deduction
        # commits at seq 2: the paused holder's lines must take the seqs after it.
        pause = PauseAt(
            "pair_after_read",
            lambda: decide_batch(store, [Request(other, {goods: 1})], none, fencing=False),
        )
        flag = unique("flag")
        [decision] = decide_batch(
            store, [Request(flag, {goods: 3}, backorder=True)], none, fencing=False, faults=pause
        )
        assert decision.outcome is Outcome.BACKORDERED, decision
        with engine.connect() as conn:
            flows = dict(
                conn.execute(
                    sa.select(stock_flow.c.flag, stock_flow.c.seq).where(
                        stock_flow.c.goods_id == goods
                    )
                ).all()
            )
            [line] = conn.execute(sa.select(backorder).where(backorder.c.goods_id == goods)).all()
        # The other buyer took seq 2; the backorder's deduction of the unit it read took seq 3
        # and its waiting line the next, 4: no two lines share a seq, as the database numbers.
        assert flows == {other: 2, flag: 3}
        assert (line.flag, line.position, line.wanted) == (flag, 4, 2)
        assert [e.seq for e in decision.entries] == [3, 4]
        row = store.level(goods)
        assert row is not None and row["ledger_seq"] == 4
    finally:
        engine.dispose()
