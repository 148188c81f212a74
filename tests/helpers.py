"""Builders the integration tests share: both apps wired in-process over httpx.WSGITransport."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

import order_service
import stock_service
from coordination.locks import LockBackend
from order_service.storage.tables import order_details, orders
from shared.config.settings import Settings
from shared.faults import Faults
from stock_service.storage.tables import stock, stock_flow
from tests.conftest import ADMIN


@dataclass
class Services:
    settings: Settings
    stock_app: Flask
    order_app: Flask
    stock: FlaskClient
    order: FlaskClient
    engine: sa.Engine

    def seed(self, goods_id: str, num: int) -> None:
        response = self.stock.put(f"/stock/{goods_id}", json={"num": num}, headers=ADMIN)
        assert response.status_code == 200, response.json

    def level(self, goods_id: str) -> int | None:
        with self.engine.connect() as conn:
            return conn.execute(
                sa.select(stock.c.num).where(stock.c.goods_id == goods_id)
            ).scalar_one_or_none()

    def flows(self, **where: Any) -> list[Any]:
        with self.engine.connect() as conn:
            query = sa.select(stock_flow)
            for column, value in where.items():
                query = query.where(stock_flow.c[column] == value)
            return list(conn.execute(query).mappings())

    def orders_of(self, user_id: str) -> list[Any]:
        with self.engine.connect() as conn:
            return list(
                conn.execute(sa.select(orders).where(orders.c.user_id == user_id)).mappings()
            )

    def details_of(self, order_id: str) -> list[Any]:
        with self.engine.connect() as conn:
            return list(
                conn.execute(
                    sa.select(order_details).where(order_details.c.order_id == order_id)
                ).mappings()
            )


@contextmanager
def running_services(settings: Settings, wrap_transport: Any = None) -> Iterator[Services]:
    """Both apps in this process; the order service reaches the stock service through
    httpx.WSGITransport, optionally wrapped (to lose a response, to time out)."""
    stock_app = stock_service.create_app(settings)
    transport: httpx.BaseTransport = httpx.WSGITransport(app=stock_app)
    if wrap_transport is not None:
        transport = wrap_transport(transport)
    order_app = order_service.create_app(settings, stock_transport=transport)
    engine = sa.create_engine(settings.stock_database_url)
    try:
        yield Services(
            settings, stock_app, order_app, stock_app.test_client(), order_app.test_client(), engine
        )
    finally:
        engine.dispose()
        order_app.extensions["orders"].close()
        stock_app.extensions["stock"].close()


@contextmanager
def held_by_another_thread(locks: LockBackend, names: list[str]) -> Iterator[None]:
    """Holds `names` on `locks` from a thread of its own for the duration of the block."""
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        with locks.hold(names, timeout=10):
            held.set()
            done.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10), "the other thread never got the lock"
        yield
    finally:
        done.set()
        holder.join()


class PauseAt(Faults):
    """At a firing of `point` (after `skip` earlier ones), runs `meanwhile` before the paused
    holder carries on: another holder's whole deduction, a server paused, a connection cut.
    Installed as a store's faults, it plays an interleaving through the store's own hooks."""

    def __init__(self, point: str, meanwhile: Callable[[], object], skip: int = 0) -> None:
        super().__init__(None)
        self.point = point
        self.meanwhile: Callable[[], object] | None = meanwhile
        self.skip = skip

    def fire(self, point: str) -> None:
        if point != self.point or self.meanwhile is None:
            return
        if self.skip:
            self.skip -= 1
            return
        action, self.meanwhile = self.meanwhile, None
        action()
