"""I10 on real servers, on the local stack: orders, a cancel (a return), an
adjustment and a threshold's crossings, relayed by the product's relay to a Redis Stream, then
`inventory check` as a user runs it on a stack with relays: I10 passes; with one stream entry
deleted by hand (XDEL) it fails and names the event. Real ZooKeeper, Redis and each SQL
database; the services in this process (tests/helpers.py), the relay in a thread."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib

from inventory.check.events_source import read_stream, run_events_check
from inventory.cli import main
from inventory.local import stack_state
from shared.config.settings import Settings
from stock_service.ledger import relay
from tests.conftest import ADMIN, unique
from tests.helpers import Services, running_services


@pytest.fixture
def events_settings(settings: Settings) -> Settings:
    # A stream of the test's own: the session's Redis is shared by every test.
    return replace(settings, stock_events_stream=unique("test:events"))


@pytest.fixture
def services(events_settings: Settings) -> Iterator[Services]:
    with running_services(events_settings) as s:
        yield s


@pytest.fixture
def a_relay(events_settings: Settings) -> Iterator[None]:
    stop = threading.Event()
    thread = threading.Thread(
        target=relay.serve, args=(events_settings, unique("relay"), stop), daemon=True
    )
    thread.start()
    yield
    stop.set()
    thread.join(15)


@pytest.fixture
def a_stack_with_relays(
    events_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `inventory up` records of a stack running a relay, pointing at the test's servers:
    `inventory check` finds the databases, the Redis and the relay there (the relay's pid is
    this process, where its thread runs)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("INVENTORY_HOME", str(home))
    monkeypatch.setenv("STOCK_EVENTS_STREAM", events_settings.stock_events_stream)
    for variable in ("ORDER_DATABASE_URL", "STOCK_DATABASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    stack_state.save_state(
        stack_state.StackState(
            home=str(home),
            order_url="http://127.0.0.1:1",
            stock_url="http://127.0.0.1:1",
            zk_hosts=events_settings.zk_hosts,
            redis_url=events_settings.redis_url,
            order_database_url=events_settings.order_database_url,
            stock_database_url=events_settings.stock_database_url,
            lock_backend="zookeeper",
            lock_scope="sku",
            pids={"relay1": os.getpid()},
        )
    )


def place(s: Services, lines: dict[str, int]) -> dict[str, Any]:
    items = [{"goodsId": g, "num": n} for g, n in lines.items()]
    answer = s.order.post("/genOrder", json={"userId": unique("u"), "items": items})
    assert answer.status_code == 200, answer.json
    return answer.json  # type: ignore[no-any-return]


def check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any] | None]:
    """`inventory check --json`: its exit code and its I10 (None: not checked); I1-I9 pass."""
    capsys.readouterr()
    code = main(["check", "--json", *args])
    results = json.loads(capsys.readouterr().out)
    assert all(r["ok"] for r in results if r["invariant"] != "I10"), results
    events = [r for r in results if r["invariant"] == "I10"]
    assert len(events) <= 1
    return code, events[0] if events else None


def test_the_events_of_orders_a_cancel_and_an_adjustment_check_and_a_deleted_one_is_named(
    services: Services,
    a_relay: None,
    a_stack_with_relays: None,
    events_settings: Settings,
    capsys: pytest.CaptureFixture[str],
) -> None:
    s, prefix = services, unique("ev") + "-"
    a, b = f"{prefix}a", f"{prefix}b"
    s.seed(a, 5)
    s.seed(b, 3)
    assert s.stock.put(f"/stock/{a}/threshold", json={"lowStock": 2}, headers=ADMIN).json
    first = place(s, {a: 2, b: 1})
    second = place(s, {a: 2})
    cancelled = s.order.post(f"/orders/{second['orderId']}/cancel")
    assert cancelled.json["status"] == "CANCELLED"  # its 2 units of a come back: a return
    restock = {"delta": 4, "reason": "restock"}
    assert s.stock.post(f"/stock/{b}/adjustments", json=restock, headers=ADMIN).status_code == 201
    place(s, {a: 3})  # a to 0: low_stock and out_of_stock events with the deduction
    started = time.monotonic()
    code, events = check(capsys, "--goods-prefix", prefix)
    print(f"\ncheck with I10: {time.monotonic() - started:.2f} s; {events['detail']}")
    assert events is not None and (code, events["ok"]) == (0, True), events
    # 2 seeds, 4 deductions (3 orders, one of 2 lines), a return, a restock; a fell below its
    # threshold twice (5 -> 3 -> 1, 3 -> 0) and ran out once.
    assert events["numbers"]["outbox_rows"] == 2 + 4 + 1 + 1 + 3

    client = redis_lib.Redis.from_url(events_settings.redis_url, decode_responses=True)
    try:
        stream = events_settings.stock_events_stream
        [(entry, fields)] = [
            (e, f)
            for e, f in client.xrange(stream)  # type: ignore[union-attr]
            if f["goodsId"] == a and f["flag"] == first["orderId"]
        ]
        # The check's read in pages of 2 (XRANGE from after the last entry) is the whole stream.
        whole = [(e, f) for e, f in client.xrange(stream) if f["goodsId"].startswith(prefix)]  # type: ignore[union-attr]
        assert list(read_stream(client, stream, prefix, page_size=2)) == whole
        assert client.xdel(stream, entry) == 1  # the first order's deduction of a, lost
    finally:
        client.close()
    code, events = check(capsys, "--goods-prefix", prefix)
    assert events is not None and (code, events["ok"]) == (1, False)
    assert events["numbers"]["lost"] == [f"#{fields['id']} ({a} seq 2 deducted)"]
    assert f"1 lost: #{fields['id']} ({a} seq 2 deducted)" in events["detail"]
    assert check(capsys, "--goods-prefix", prefix, "--no-events") == (0, None)  # skipped


def test_a_stream_that_cannot_be_read_fails_i10_and_says_so(settings: Settings) -> None:
    """No Redis where the stack said (a free port): I10 fails with the reason, it does not
    pass for want of events nor stop the other checks with a traceback."""
    from inventory.local.servers import free_port

    result = run_events_check(
        settings.stock_database_url, f"redis://127.0.0.1:{free_port()}/0", "s", unique("ev")
    )
    assert (result.invariant, result.ok) == ("I10", False)
    assert result.detail.startswith("stream s unreadable: ")
