"""Fencing tokens on the stock rows: a stale lock holder's write is refused by the database."""

from __future__ import annotations

import pytest

from shared.db import make_engine
from shared.locks import Lease, LockLost
from stock_service.store import StockStore
from tests.conftest import unique


@pytest.fixture
def store(database_url: str) -> StockStore:
    return StockStore(make_engine(database_url), fencing=True)


def seeded(store: StockStore, num: int) -> str:
    goods = unique()
    store.set_level(goods, num, Lease(tokens={goods: 1}))
    return goods


def test_a_holder_with_an_older_token_writes_nothing(store: StockStore) -> None:
    goods = seeded(store, 5)
    assert store.deduct(unique("flag"), {goods: 1}, Lease(tokens={goods: 200})) == []
    with pytest.raises(LockLost):
        store.deduct(unique("flag"), {goods: 1}, Lease(tokens={goods: 100}))
    assert store.level(goods)["num"] == 4


def test_a_stale_holder_that_read_before_the_new_holder_acquired_is_refused(
    store: StockStore,
) -> None:
    goods = seeded(store, 1)
    # Holder A registers token 100 and reads the level (1) ... then pauses past its session.
    level_seen_by_a = store._register_and_read([goods], {goods: 100})[goods].num
    assert level_seen_by_a == 1
    # Holder B acquires (token 200) and sells the last unit.
    assert store.deduct(unique("flag"), {goods: 1}, Lease(tokens={goods: 200})) == []
    # A resumes and writes what it computed: refused, because the row carries B's token.
    with pytest.raises(LockLost), store.engine.begin() as conn:
        StockStore._write_level(conn, goods, level_seen_by_a - 1, token=100)
    assert store.level(goods)["num"] == 0


def test_a_lease_lost_before_commit_rolls_the_deduction_back(store: StockStore) -> None:
    goods = seeded(store, 5)
    flag = unique("flag")
    lost = Lease(tokens={goods: 300}, still_held=lambda: False)
    with pytest.raises(LockLost):
        store.deduct(flag, {goods: 2}, lost)
    assert store.level(goods)["num"] == 5
    assert store.flows(flag) == []


def test_without_fencing_a_stale_token_still_writes(database_url: str) -> None:
    unfenced = StockStore(make_engine(database_url), fencing=False)
    goods = seeded(unfenced, 5)
    unfenced.deduct(unique("flag"), {goods: 1}, Lease(tokens={goods: 200}))
    assert unfenced.deduct(unique("flag"), {goods: 1}, Lease(tokens={goods: 100})) == []
    assert unfenced.level(goods)["num"] == 3
