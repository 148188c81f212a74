"""Fencing tokens on the stock rows, on SQLite, PostgreSQL and MySQL: a stale lock holder's write
is refused by the database, with one commit per lock hold.

The interleavings are played for real: a holder is paused at the hold's own pause point (after
its read, before its write: where the stale-holder demo stops a worker) while another holder
runs a whole deduction on the same database.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import redis as redis_lib
import sqlalchemy as sa

from coordination.locks import Lease, LockLost
from inventory.local.servers import ServerProcess
from shared.database.engines import make_engine, utcnow
from shared.faults import NO_FAULTS, Faults
from stock_service.core.plan import Adjustment, Decision, Kind, Outcome, Request, Shortfall
from stock_service.deduction.decide import decide_batch
from stock_service.storage.store import StockStore
from stock_service.storage.tables import stock_flow
from tests.conftest import unique
from tests.helpers import PauseAt


@pytest.fixture
def engine(database_url: str) -> sa.Engine:
    return make_engine(database_url)


@pytest.fixture
def store(engine: sa.Engine) -> StockStore:
    return StockStore(engine)


def deduct(
    store: StockStore,
    flag: str,
    lines: dict[str, int],
    lease: Lease,
    faults: Faults = NO_FAULTS,
    fencing: bool = True,
) -> list[Shortfall]:
    """One request in a hold of its own: its shortfalls, empty when deducted (or duplicate)."""
    return decide_batch(store, [Request(flag, lines)], lease, fencing, faults)[0].shortfalls


def decide(store: StockStore, requests: list[Request], lease: Lease) -> list[Decision]:
    return decide_batch(store, requests, lease, fencing=True)


def seeded(store: StockStore, num: int, token: int = 1) -> str:
    """A goods id brought into being by a `set` adjustment under `token` (the admin seed)."""
    goods = unique()
    request = Request(
        unique("adj"), {goods: 0}, Kind.ADJUST, adjust=Adjustment(goods, "set", num=num)
    )
    [decision] = decide_batch(store, [request], Lease(tokens={goods: token}), fencing=True)
    assert decision.outcome is Outcome.ADJUSTED, decision
    return goods


def flows_of(engine: sa.Engine, goods: str) -> list[tuple[str, int, int]]:
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(stock_flow.c.flag, stock_flow.c.num, stock_flow.c.fence).where(
                stock_flow.c.goods_id == goods
            )
        )
        return sorted((r.flag, r.num, r.fence) for r in rows)


def test_a_holder_whose_token_is_older_than_the_rows_writes_nothing(store: StockStore) -> None:
    goods = seeded(store, 5)
    assert deduct(store, unique("flag"), {goods: 1}, Lease(tokens={goods: 200})) == []
    flag = unique("flag")
    with pytest.raises(LockLost, match="newer lock holder"):
        deduct(store, flag, {goods: 1}, Lease(tokens={goods: 100}))
    assert store.level(goods)["num"] == 4
    assert store.flows(flag) == []


def test_a_stale_holder_that_read_before_the_new_holder_wrote_is_refused(
    engine: sa.Engine, store: StockStore
) -> None:
    goods = seeded(store, 1)
    flag_a, flag_b = unique("flag"), unique("flag")
    # Holder A (token 100) reads the last unit, then pauses past its session; meanwhile
    # holder B (token 200) acquires and sells that unit.
    pause_a = PauseAt(
        "stop_after_read",
        lambda: deduct(store, flag_b, {goods: 1}, Lease(tokens={goods: 200})),
    )
    # A resumes and writes what it computed from its old read: refused, nothing written.
    with pytest.raises(LockLost, match="newer lock holder"):
        deduct(store, flag_a, {goods: 1}, Lease(tokens={goods: 100}), pause_a)
    assert store.level(goods)["num"] == 0
    assert flows_of(engine, goods) == [(flag_b, 1, 200)]


def test_a_stale_write_that_lands_first_makes_the_new_holder_read_again(
    engine: sa.Engine, store: StockStore
) -> None:
    goods = seeded(store, 5)
    flag_a, flag_b = unique("flag"), unique("flag")
    # B (token 200) reads 5 and pauses; the stale A (token 100), which read before B
    # acquired, writes first: 5 - 3 = 2 is a correct serial step, and it lands.
    pause_b = PauseAt(
        "stop_after_read",
        lambda: deduct(store, flag_a, {goods: 3}, Lease(tokens={goods: 100})),
    )
    # B's compare-and-set finds a row it did not read: it reads again (2 left) and its
    # request for 3 no longer fits. Without the compare-and-set B would write 5 - 3 = 2 over
    # A's sale and six units would be sold from five.
    shortfalls = deduct(store, flag_b, {goods: 3}, Lease(tokens={goods: 200}), pause_b)
    assert shortfalls and shortfalls[0].available == 2
    assert store.level(goods)["num"] == 2
    assert flows_of(engine, goods) == [(flag_a, 3, 100)]


def test_after_reading_again_the_new_holder_moves_the_fence_forward(
    engine: sa.Engine, store: StockStore
) -> None:
    goods = seeded(store, 5)
    flag_a, flag_b = unique("flag"), unique("flag")
    pause_b = PauseAt(
        "stop_after_read",
        lambda: deduct(store, flag_a, {goods: 1}, Lease(tokens={goods: 100})),
    )
    assert deduct(store, flag_b, {goods: 1}, Lease(tokens={goods: 200}), pause_b) == []
    row = store.level(goods)
    assert (row["num"], row["fence"]) == (3, 200)
    # The fence of each flow, in commit order, never goes backwards.
    assert flows_of(engine, goods) == sorted([(flag_a, 1, 100), (flag_b, 1, 200)])


def test_a_lease_lost_before_commit_rolls_the_whole_batch_back(store: StockStore) -> None:
    a, b = seeded(store, 5), seeded(store, 5)
    requests = [Request(unique("flag"), {a: 1}), Request(unique("flag"), {a: 1, b: 2})]
    lost = Lease(tokens={a: 300, b: 300}, still_held=lambda: False)
    with pytest.raises(LockLost):
        decide(store, requests, lost)
    assert (store.level(a)["num"], store.level(b)["num"]) == (5, 5)
    assert all(store.flows(r.flag) == [] for r in requests)


def test_a_batch_is_decided_in_order_with_one_token(store: StockStore) -> None:
    goods = seeded(store, 4)
    flags = [unique("flag") for _ in range(4)]
    decisions = decide(
        store,
        [
            Request(flags[0], {goods: 3}),
            Request(flags[1], {goods: 2}),  # does not fit after the first
            Request(flags[0], {goods: 1}),  # the first one's flag again
            Request(flags[3], {goods: 1}),
        ],
        Lease(tokens={goods: 500}),
    )
    assert [d.outcome for d in decisions] == [
        Outcome.DEDUCTED,
        Outcome.INSUFFICIENT,
        Outcome.DUPLICATE,
        Outcome.DEDUCTED,
    ]
    assert decisions[1].shortfalls[0].available == 1
    row = store.level(goods)
    assert (row["num"], row["fence"]) == (0, 500)
    assert [f["num"] for f in store.flows(flags[0])] == [3]


def test_one_hold_writes_a_row_twice_when_its_batch_is_served_in_two_parts(
    store: StockStore,
) -> None:
    # run_batch serves the part of a batch whose names are held, then the rest under the same
    # claim: the second write finds the hold's own token on the row, which is not a newer one.
    goods = seeded(store, 5)
    lease = Lease(tokens={goods: 700})
    first, rest = unique("flag"), unique("flag")
    assert deduct(store, first, {goods: 1}, lease) == []
    assert deduct(store, rest, {goods: 2}, lease) == []
    row = store.level(goods)
    assert (row["num"], row["fence"]) == (2, 700)
    assert [f["num"] for f in store.flows(rest)] == [2]


def test_a_holder_that_read_between_two_writes_of_one_hold_reads_again(
    engine: sa.Engine, store: StockStore
) -> None:
    """Found by the model (with restocks: -DFENCE_WITHOUT_SEQ): a hold that writes a row
    twice (a split batch) leaves its own token on the row both times. A newer holder that read
    between the two writes finds the fence it read, and on the fence alone would write its
    level over the second write: a lost update. The row's ledger seq is in the compare-and-set
    too, so it reads again."""
    goods = seeded(store, 5)
    old = Lease(tokens={goods: 100})
    first, second, newer = unique("flag"), unique("flag"), unique("flag")
    assert deduct(store, first, {goods: 1}, old) == []  # the hold's first part: 4, fence 100
    # The newer holder (token 200) reads 4 and fence 100, and pauses; the old hold's second
    # part (past its session, unaware) writes 4 - 2 = 2, its own fence 100 left on the row.
    pause_newer = PauseAt("stop_after_read", lambda: deduct(store, second, {goods: 2}, old))
    assert deduct(store, newer, {goods: 1}, Lease(tokens={goods: 200}), pause_newer) == []
    row = store.level(goods)
    # Fenced on its fence alone, the newer holder would have written 4 - 1 = 3 over the 2.
    assert (row["num"], row["fence"]) == (1, 200)
    assert sum(num for _, num, _ in flows_of(engine, goods)) == 5 - row["num"]


def test_without_fencing_a_stale_write_still_lands(engine: sa.Engine) -> None:
    unfenced = StockStore(engine)
    goods = seeded(unfenced, 1)
    flag_a, flag_b = unique("flag"), unique("flag")
    pause_a = PauseAt(
        "stop_after_read",
        lambda: deduct(unfenced, flag_b, {goods: 1}, Lease(tokens={goods: 200}), fencing=False),
    )
    # The oversell fencing prevents: A writes 1 - 1 = 0 over B's sale of the same unit.
    assert (
        deduct(unfenced, flag_a, {goods: 1}, Lease(tokens={goods: 100}), pause_a, fencing=False)
        == []
    )
    assert unfenced.level(goods)["num"] == 0
    assert len(flows_of(engine, goods)) == 2
    # The lost update shows in the level alone: the two lines took the seqs the database gave
    # (before, A's line kept the seq it planned from its stale read: two flows at seq 2).
    assert seqs_of(engine, goods) == [2, 3] and unfenced.level(goods)["ledger_seq"] == 3


def test_without_a_lock_two_buyers_that_read_together_sell_one_unit_twice(
    engine: sa.Engine,
) -> None:
    """LOCK_BACKEND=none (no tokens): the baseline's lost update, played the same on every
    database; and a line written at a seq another holds fails at the database."""
    store = StockStore(engine)
    goods = seeded(store, 10)
    none = Lease(tokens={goods: None})
    pause = PauseAt("stop_after_read", lambda: deduct(store, unique("flag"), {goods: 1}, none))
    assert deduct(store, unique("flag"), {goods: 1}, none, pause) == []
    assert store.level(goods)["num"] == 9  # two sold, one taken off the level
    assert seqs_of(engine, goods) == [2, 3]
    row = {"id": unique("id"), "flag": unique("flag"), "goods_id": goods, "num": 1}
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
        conn.execute(
            sa.insert(stock_flow).values(
                **row, seq=2, seed_version=1, level_after=8, created_at=utcnow()
            )
        )


def seqs_of(engine: sa.Engine, goods: str) -> list[int]:
    with engine.connect() as conn:
        rows = conn.execute(sa.select(stock_flow.c.seq).where(stock_flow.c.goods_id == goods))
        return sorted(int(r.seq) for r in rows)


def test_one_flag_is_one_operation_even_with_two_bodies_under_two_locks(
    engine: sa.Engine, store: StockStore
) -> None:
    """Two attempts of one flag with different lines (two processes, so two locks: one per
    goods id) both read before either writes. The (flag, goods id) key of the flows cannot
    see it; the decision's key (one row per flag) can: one deducts, the other is a duplicate."""
    g1, g2 = seeded(store, 5), seeded(store, 5)
    flag = unique("flag")
    pause = PauseAt(
        "stop_after_read", lambda: deduct(store, flag, {g2: 1}, Lease(tokens={g2: 200}))
    )
    deduct(store, flag, {g1: 1}, Lease(tokens={g1: 100}), pause)
    assert (store.level(g1)["num"], store.level(g2)["num"]) == (5, 4)
    assert [(f["goods_id"], f["num"]) for f in store.flows(flag)] == [(g2, 1)]
    assert store.decision(flag) == "deducted"


def test_a_deduction_that_read_before_the_flag_was_voided_writes_nothing(
    engine: sa.Engine, store: StockStore
) -> None:
    """Void needs no lock: a holder that read the flag undecided, then finds it voided by the
    decision's key at its write, reads again and answers voided."""
    goods = seeded(store, 5)
    flag = unique("flag")
    pause = PauseAt("stop_after_read", lambda: store.void(flag, "voided: test"))
    [decision] = decide_batch(
        store, [Request(flag, {goods: 1})], Lease(tokens={goods: 100}), True, pause
    )
    assert decision.outcome is Outcome.VOIDED
    assert store.level(goods)["num"] == 5 and store.flows(flag) == []
    assert store.void(flag, "again") == "voided"


def test_the_pair_fault_lines_the_baseline_s_lost_update_up_every_time(
    engine: sa.Engine, redis_server: ServerProcess
) -> None:
    """pair_after_read (FAULT_INJECTION): two deductions without a lock meet after their reads,
    so each pair sells two units and takes one off the level, in every run; fenced, the same
    meeting oversells nothing (the older token's write is refused or reads again)."""
    client = redis_lib.Redis(host="127.0.0.1", port=redis_server.port)
    faults = Faults(client)
    store = StockStore(engine)

    def pair(goods: str, tokens: tuple[int | None, int | None]) -> list[object]:
        faults.arm("pair_after_read", 10, 2)
        with ThreadPoolExecutor(2) as pool:
            done = [
                pool.submit(
                    deduct, store, unique("flag"), {goods: 1}, Lease({goods: t}), faults, True
                )
                for t in tokens
            ]
            return [d.exception(30) or d.result() for d in done]

    unlocked = seeded(store, 10)
    for _ in range(3):
        assert pair(unlocked, (None, None)) == [[], []]
    assert (len(flows_of(engine, unlocked)), store.level(unlocked)["num"]) == (6, 7)
    fenced = seeded(store, 10)
    for i in range(3):
        answers = pair(fenced, (100 + 2 * i, 101 + 2 * i))
        assert all(a == [] or isinstance(a, LockLost) for a in answers), answers
    assert len(flows_of(engine, fenced)) == 10 - store.level(fenced)["num"]
    client.close()
