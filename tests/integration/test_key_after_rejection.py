"""A repeat of an Idempotency-Key answers the order as it is now, also when the first request's
order was rejected by the stock service (unknown goods) and removed while the repeat ran: a
clear 404, never 202 PENDING for an order GET /orders/{id} will never find, never a 500. The
interleavings are played through hooks on the order service's own steps. Real ZooKeeper, Redis
and each SQL database.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from order_service.core.model import OrderRow
from order_service.storage import transitions
from shared.config.settings import Settings
from tests.conftest import unique
from tests.helpers import Services, running_services

WAIT = 30.0


class OnReduce(httpx.BaseTransport):
    """Runs `meanwhile` once, when the first reduceStock call is on its way."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.meanwhile: Callable[[], None] | None = None

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.startswith("/reduceStock") and self.meanwhile is not None:
            action, self.meanwhile = self.meanwhile, None
            action()
        return self.inner.handle_request(request)


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings, wrap_transport=OnReduce) as s:
        yield s


def on_reduce(s: Services) -> OnReduce:
    transport = s.order_app.extensions["orders"].stock.http._transport
    assert isinstance(transport, OnReduce)
    return transport


def order_of_unknown_goods() -> dict[str, Any]:
    return {"userId": unique("u"), "items": [{"goodsId": unique("nowhere"), "num": 1}]}


def submit(s: Services, body: dict[str, Any], key: str) -> Any:
    return s.order_app.test_client().post("/genOrder", json=body, headers={"Idempotency-Key": key})


def in_thread(action: Callable[[], Any], name: str) -> tuple[threading.Thread, list[Any]]:
    answers: list[Any] = []
    thread = threading.Thread(target=lambda: answers.append(action()), name=name)
    thread.start()
    return thread, answers


def assert_removed_answer(answer: Any, s: Services) -> None:
    assert answer.status_code == 404, (answer.status_code, answer.json)
    assert "rejected by the stock service" in answer.json["error"], answer.json
    if "orderId" in answer.json:
        assert s.order.get(f"/orders/{answer.json['orderId']}").status_code == 404


def test_a_repeat_waiting_for_an_order_that_is_rejected_answers_404_not_pending(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = services
    key, body = unique("key"), order_of_unknown_goods()
    store = s.order_app.extensions["orders"].flow.store
    found = threading.Event()
    lookup = store.by_idempotency_key

    def by_key(k: str) -> OrderRow | None:
        row = lookup(k)
        if row is not None:
            found.set()  # the repeat found the first's row, PENDING: it waits for its answer
        return row

    monkeypatch.setattr(store, "by_idempotency_key", by_key)
    repeat: list[Any] = []

    def start_the_repeat() -> None:
        thread, answers = in_thread(lambda: submit(s, body, key), "repeat")
        repeat.append((thread, answers))
        assert found.wait(WAIT), "the repeat never found the first order"

    on_reduce(s).meanwhile = start_the_repeat
    first = submit(s, body, key)
    assert first.status_code == 422 and first.json["goodsIds"], first.json
    thread, answers = repeat[0]
    thread.join(WAIT)
    assert_removed_answer(answers[0], s)
    assert answers[0].json["orderId"]  # the order it waited for, which GET /orders answers 404


def test_a_repeat_whose_insert_met_the_key_just_before_the_removal_answers_404_not_500(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The repeat looks its key up before the first order is written (nothing), inserts after
    (the key is taken), and looks again after the first order's removal (nothing again)."""
    s = services
    key, body = unique("key"), order_of_unknown_goods()
    store = s.order_app.extensions["orders"].flow.store
    looked, calling = threading.Event(), threading.Event()
    looking_again, removed = threading.Event(), threading.Event()
    lookup, remove = store.by_idempotency_key, transitions.remove
    lookups = 0

    def by_key(k: str) -> OrderRow | None:
        nonlocal lookups
        if threading.current_thread().name != "repeat":
            return lookup(k)
        lookups += 1
        if lookups == 1:  # before the first order is written
            row = lookup(k)
            looked.set()
            assert calling.wait(WAIT), "the first order never called the stock service"
            return row
        looking_again.set()  # its insert met the key: taken
        assert removed.wait(WAIT), "the first order was never removed"
        return lookup(k)

    def remove_after_the_repeat_s_insert(store: Any, order_id: str) -> bool:
        assert looking_again.wait(WAIT), "the repeat's insert never met the key"
        try:
            return remove(store, order_id)
        finally:
            removed.set()

    monkeypatch.setattr(store, "by_idempotency_key", by_key)
    monkeypatch.setattr(transitions, "remove", remove_after_the_repeat_s_insert)
    on_reduce(s).meanwhile = calling.set
    thread, answers = in_thread(lambda: submit(s, body, key), "repeat")
    assert looked.wait(WAIT), "the repeat never looked its key up"
    first = submit(s, body, key)
    thread.join(WAIT)
    assert first.status_code == 422 and first.json["goodsIds"], first.json
    assert lookups == 2
    assert_removed_answer(answers[0], s)
