"""`inventory demo`: the story of one order, with evidence taken from the real parts.

While the order runs, a Redis MONITOR connection records the flag being written and taken,
and a ZooKeeper children watch records the lock node appearing and vanishing.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import redis
from kazoo.client import KazooClient
from kazoo.protocol.states import ZnodeStat
from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from inventory.local.client import StackClient
from inventory.local.stack_state import StackState
from shared.config.settings import Settings

GOODS = "demo-phone"


class RedisMonitor:
    """Records the commands Redis executes that touch a key (MONITOR sees every client)."""

    def __init__(self, url: str) -> None:
        self.client = redis.Redis.from_url(url)
        self.lines: list[str] = []
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with self.client.monitor() as monitor:
            self._ready.set()
            for event in monitor.listen():
                command = str(event.get("command", ""))
                if command.split(" ")[0].upper() in ("SET", "EXISTS", "DEL"):
                    self.lines.append(command)
                if self._stop.is_set():
                    return

    def __enter__(self) -> RedisMonitor:
        self._thread.start()
        self._ready.wait(5)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.client.ping()  # one more command wakes the listener so it sees the stop
        self._thread.join(5)

    def about(self, key: str) -> list[str]:
        return [line for line in self.lines if key in line]


class LockWatch:
    """Records the children of a lock path as ZooKeeper reports them changing."""

    def __init__(self, hosts: str, path: str) -> None:
        self.zk = KazooClient(hosts=hosts)
        self.path = path
        self.seen: list[list[str]] = []

    def __enter__(self) -> LockWatch:
        self.zk.start(timeout=10)
        self.zk.ensure_path(self.path)
        armed: set[int] = set()

        def record(children: list[str]) -> None:
            self.seen.append(sorted(children))

        def on_path(_data: bytes | None, stat: ZnodeStat | None) -> None:
            # A goods id's lock path is a container node: ZooKeeper removes it once empty, and
            # a ChildrenWatch ends with the path it watched. So one is armed on every new
            # incarnation of the path (its czxid), here or when the stock service makes it.
            if stat is not None and stat.czxid not in armed:
                armed.add(stat.czxid)
                self.zk.ChildrenWatch(self.path, record)

        self.zk.DataWatch(self.path, on_path)
        return self

    def __exit__(self, *exc: object) -> None:
        self.zk.stop()
        self.zk.close()


def order_behind_the_demo(watch: LockWatch, place: Callable[[], Any]) -> Any:
    """Place the order while the demo itself holds the goods id's lock (kazoo's Lock, the same
    node naming as the stock service's recipe), so the stock service's node is seen queued
    behind it; then let go. A lock held for a few milliseconds is over before a watch's
    re-read of the children comes back, so without this the node is often not seen at all."""
    lock = watch.zk.Lock(watch.path, "inventory demo")
    if not lock.acquire(timeout=10):
        return place()  # someone else holds it: the order goes as it would
    answer: list[Any] = []
    worker = threading.Thread(target=lambda: answer.append(place()), daemon=True)
    try:
        worker.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(len(c) > 1 for c in watch.seen):
            time.sleep(0.01)  # until the stock service's node queues behind ours
    finally:
        lock.release()
    worker.join(60)
    if not answer:
        raise RuntimeError("the order got no answer within 60 s")
    return answer[0]


def stock_events(state: StackState, marks: list[str], wait: float = 10.0) -> list[dict[str, str]]:
    """The events of the demo's goods that name one of `marks` (a flag, a reason), once the
    relay has published them (it looks at the outbox every 0.2 s)."""
    settings = Settings.from_env({**os.environ, **state.env()})
    client = redis.Redis.from_url(state.redis_url, decode_responses=True)
    try:
        deadline = time.monotonic() + wait
        while True:
            stream: Any = client.xrange(settings.stock_events_stream)
            found: list[dict[str, str]] = [
                fields
                for _id, fields in stream
                if fields.get("goodsId") == GOODS
                and (fields.get("flag") in marks or fields.get("reason") in marks)
            ]
            if {f.get("flag") or f.get("reason") for f in found} >= set(marks):
                return found
            if time.monotonic() > deadline:
                return found
            time.sleep(0.2)
    finally:
        client.close()


def run_demo(state: StackState, console: Console) -> int:
    client = StackClient(state)
    try:
        return tell_story(state, client, console)
    finally:
        client.close()


def tell_story(state: StackState, client: StackClient, console: Console) -> int:
    console.rule("[bold]POST /genOrder, one order end to end")
    console.print(f"order service {state.order_url}   stock service {state.stock_url}")
    console.print(
        f"ZooKeeper {state.zk_hosts}   Redis {state.redis_url}   "
        f"lock {state.lock_backend}/{state.lock_scope}"
    )

    client.seed(GOODS, 5)
    before = client.level(GOODS)
    console.print(f"\n[bold]1. Stock before[/]: {GOODS} = {before}")

    body = {"userId": "alice", "items": [{"goodsId": GOODS, "num": 2}]}
    key = f"demo-{uuid.uuid4().hex[:12]}"
    console.print(
        f"\n[bold]2. The order[/]: POST /genOrder  Idempotency-Key: {key}\n   {json.dumps(body)}"
    )
    lock_path = f"/inventory/locks/{GOODS if state.lock_scope == 'sku' else 'global'}"
    watch = LockWatch(state.zk_hosts, lock_path) if state.lock_backend == "zookeeper" else None
    with RedisMonitor(state.redis_url) as monitor:
        if watch:
            watch.__enter__()
        try:
            if watch:
                response = order_behind_the_demo(watch, lambda: client.gen_order(body, key))
            else:
                response = client.gen_order(body, key)
        finally:
            if watch:
                watch.__exit__()
    answer = response.json()
    order_id = answer.get("orderId", "")
    console.print(f"   -> HTTP {response.status_code} {json.dumps(answer)}")

    console.print("\n[bold]3. The operation flag in Redis[/] (seen by MONITOR):")
    for line in monitor.about(order_id) or ["(no command seen)"]:
        console.print(f"   {line}")
    console.print(
        "   the order service SET the flag with a TTL; the stock service's pre-filter checked it"
        " (EXISTS), and deleted it (DEL) once the deduction was committed: a retry after that is"
        " a duplicate, a retry of an attempt that died before committing is served."
    )

    if watch:
        console.print(f"\n[bold]4. The lock node[/] under {lock_path} (children as they changed):")
        for children in watch.seen:
            console.print(f"   {children or '[]'}")
        console.print(
            "   the demo's own node first (it held the lock), the stock service's queued behind"
            " it, watching only its predecessor; once the demo let go, the deduction ran under"
            " the stock service's node, gone on release."
        )

    flows = client.flows(order_id)
    table = Table(title="5. GET /stockFlow/{flag}")
    for column in ("id", "flag", "goodsId", "num", "fence (token)"):
        table.add_column(column, overflow="fold")
    for flow in flows:
        table.add_row(
            flow["id"], flow["flag"], flow["goodsId"], str(flow["num"]), str(flow["fence"])
        )
    console.print()
    console.print(table)

    after = client.level(GOODS)
    console.print(
        f"\n[bold]6. Stock after[/]: {GOODS} = {after}  (before {before}, "
        f"deducted {sum(f['num'] for f in flows)})"
    )

    again = client.gen_order(body, key)
    console.print(
        f"\n[bold]7. The same request again[/] (a double click, same key): "
        f"HTTP {again.status_code} orderId {again.json().get('orderId')} "
        f"replayed={again.headers.get('Idempotent-Replayed')}; stock now "
        f"{client.level(GOODS)}"
    )

    greedy = client.gen_order({"userId": "bob", "items": [{"goodsId": GOODS, "num": 50}]})
    console.print(
        f"\n[bold]8. An order for more than is left[/]: HTTP {greedy.status_code} "
        f"{json.dumps(greedy.json())}; stock still {client.level(GOODS)}"
    )

    restock = client.adjust(GOODS, delta=3, reason="restock", reference="demo delivery 1")
    console.print(
        f"\n[bold]9. An adjustment[/]: POST /stock/{GOODS}/adjustments "
        f'{{"delta": 3, "reason": "restock"}} -> HTTP {restock.status_code} '
        f"{json.dumps(restock.json().get('entry'))}; stock now {client.level(GOODS)}"
    )
    history = client.history(GOODS, limit=6)
    ledger = Table(title=f"10. GET /stock/{GOODS}/history: why {GOODS} is {client.level(GOODS)}")
    for column in ("seq", "kind", "delta", "level after", "flag or reason"):
        ledger.add_column(column, overflow="fold")
    for entry in history.get("entries", []):
        what = entry.get("flag") or entry.get("reason") or ""
        ledger.add_row(
            str(entry["seq"]), entry["kind"], f"{entry['delta']:+d}", str(entry["levelAfter"]), what
        )
    console.print()
    console.print(ledger)
    events = stock_events(state, [order_id, "restock"])
    console.print("\n[bold]11. The stock events[/] (the relay's Redis Stream, from the outbox):")
    for fields in events or [{"kind": "(none yet: is a relay running?)"}]:
        what = fields.get("flag") or fields.get("reason") or ""
        console.print(
            f"   #{fields.get('id', '')} {fields.get('goodsId', '')} seq {fields.get('seq', '')} "
            f"{fields['kind']} {fields.get('delta', '')} -> {fields.get('level', '')} {what}"
        )

    order = client.order_row(order_id)
    ok = (
        response.status_code == 200
        and order["status"] == "CONFIRMED"
        and len(flows) == 1
        and before is not None
        and after == before - 2
        and again.json().get("orderId") == order_id
        and greedy.status_code == 409
        and restock.status_code == 201
        and client.level(GOODS) == after + 3
        and {e["kind"] for e in history.get("entries", [])} >= {"deducted", "adjusted"}
        and any(f.get("flag") == order_id for f in events)
    )
    verdict = "[green]the story holds" if ok else "[red]something is off: see above"
    console.print(
        Panel(
            f"{verdict}[/]: order {order_id} is {order['status']}, "
            f"{before} - 2 = {after}, one flow, one order for two submits; restocked, "
            "every change in the history and the events"
        )
    )
    return 0 if ok else 1
