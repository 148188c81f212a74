"""What a chaos run does with webhooks: before it writes anything, a receiver (receiver.py) on a
host of the cluster, and a subscription to it with a secret of the run's (every kind, and a
shop's share of the run's goods ids: `subscribed`; a subscription sees the events written after
it was made); through the run, the
cluster's elected deliverers (two, on the stock hosts) push the stock events to it while the
nemesis works, and kill-webhook-receiver kills it (SIGKILL) and starts it again on its log;
after the settlement, once the outbox of the run's goods ids is delivered or dead-lettered (or
the wait ran out), W1 (check.py) over the receiver's log, the outbox and the dead letters.
At the end the subscription is deleted and the receiver stopped and forgotten by the cluster's
state, so the next run starts from none.
"""

from __future__ import annotations

import contextlib
import secrets
import socket
import sys
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Engine

from inventory.chaos.verdict import UNKNOWN, Verdict
from inventory.chaos.webhooks.check import NAME, Judged, counts, judge, verdict
from inventory.chaos.webhooks.receipts import Receipt, read_receipts
from inventory.check.events import OutboxRow
from inventory.check.events_source import read_outbox
from inventory.cluster import deploy, topology
from inventory.cluster.deploy import ClusterState
from inventory.cluster.nodes import Proc
from inventory.local.servers import wait_until

RECEIVER = "webhook-receiver"  # its name among the cluster's programs
HOST = "order2"  # not a stock host: each delivery crosses the cluster's network
PORT = 9090
DELIVER_WAIT = 60.0  # seconds after the settlement for the last deliveries
TIMEOUT = 10.0
SHARE = 5  # one in this many of the run's plain and big goods ids is subscribed


def subscribed(goods: Any) -> list[str]:
    """The goods ids the run's subscription names: what a shop would, the goods it sells, not
    the whole catalogue. Every kind of goods id the run moves (hot, scarce, located, owed,
    reserved, limited) and a share of the many plain and big ones: about a fifth of the run's
    events, which the deliverers keep up with through the faults (a subscription to every goods
    id of a quick run, 31,477 events in five minutes, was delivered at about 45 a second on the
    cluster's synchronous PostgreSQL: docs/webhooks.md)."""
    share = [*sorted(goods.others)[::SHARE], *sorted(goods.big)[::SHARE]]
    kinds = [goods.hot, goods.scarce, goods.located, goods.owed, goods.reserved, goods.limited]
    return sorted({*share, *(g for kind in kinds for g in kind)})


def receiver_url() -> str:
    return f"http://{topology.host(HOST).address}:{PORT}/hooks/stock"


def listening(timeout: float = 1.0) -> bool:
    """The receiver accepts connections (from the operator's side of the bridge)."""
    try:
        with socket.create_connection((topology.host(HOST).address, PORT), timeout=timeout):
            return True
    except OSError:
        return False


@dataclass
class WebhookSide:
    state: ClusterState
    prefix: str  # the run's goods ids
    goods_ids: list[str] = field(default_factory=list)  # the subscription's (`subscribed`)
    subscription: str = ""
    log: Path = field(default_factory=Path)
    figures: dict[str, Any] = field(default_factory=dict)

    def open(self) -> None:
        """The receiver started and listening, then the subscription made."""
        folder = Path(self.state.home) / RECEIVER
        folder.mkdir(parents=True, exist_ok=True)
        secret = secrets.token_urlsafe(24)
        secret_file = folder / "secret"
        secret_file.touch(mode=0o600)
        secret_file.chmod(0o600)
        secret_file.write_text(secret)
        self.log = folder / f"receipts-{self.prefix.rstrip('-')}.jsonl"
        argv = [
            sys.executable,
            "-m", "inventory.chaos.webhooks.receiver", "--port", str(PORT),
            "--log", str(self.log), "--secret-file", str(secret_file),
        ]  # fmt: skip
        proc = Proc(RECEIVER, HOST, argv, str(folder / "receiver.log"), {"PYTHONUNBUFFERED": "1"})
        forget(self.state)  # a crashed run's
        deploy.start(self.state, deploy.on_its_clock(self.state, proc))  # its host's, as all
        wait_until(listening, 30, RECEIVER, Path(proc.log), 0.2, alive=proc.alive)
        body = {"url": receiver_url(), "secret": secret, "goodsIds": self.goods_ids}
        with httpx.Client(timeout=TIMEOUT, headers=self.state.admin_headers()) as client:
            answer = client.post(f"{topology.STOCK_URL}/subscriptions", json=body)
            answer.raise_for_status()
            self.subscription = str(answer.json()["id"])

    def dead(self) -> list[dict[str, Any]]:
        path = f"{topology.STOCK_URL}/subscriptions/{self.subscription}/failed"
        answer = httpx.get(path, headers=self.state.admin_headers(), timeout=TIMEOUT)
        answer.raise_for_status()
        return list(answer.json()["failed"])

    def receipts(self) -> list[Receipt]:
        """The run's: its goods ids', and any whose signature failed (its goods id unread)."""
        return [
            r for r in read_receipts(self.log) if r.goods_id.startswith(self.prefix) or not r.valid
        ]

    def check(self, stock_engine: Engine) -> Verdict:
        """W1, once every outbox row of the run's goods ids was accepted by the receiver or is
        dead-lettered, or DELIVER_WAIT passed (then W1 names what is missing)."""
        try:
            judged, receipts, waited = wait_and_judge(
                lambda: read_outbox(stock_engine, self.prefix)[0],
                lambda: {int(f["eventId"]) for f in self.dead()},
                self.receipts,
                DELIVER_WAIT,
                self.goods_ids,
            )
        except Exception as exc:
            return Verdict("W1", NAME, UNKNOWN, f"{type(exc).__name__}: {exc}")
        self.figures = {
            **counts(receipts),
            **judged.numbers,
            "waited_s": round(waited, 1),
            "restarts": self.restarts(),
        }
        said = f"the last deliveries waited for {waited:.0f} s"
        return verdict(judged, said)

    def restarts(self) -> int:
        log = Path(self.state.home) / RECEIVER / "receiver.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        return max(text.count("receiving on") - 1, 0)

    def close(self) -> None:
        """The subscription deleted, the receiver stopped and out of the cluster's state."""
        if self.subscription:
            with contextlib.suppress(httpx.HTTPError):
                httpx.delete(
                    f"{topology.STOCK_URL}/subscriptions/{self.subscription}",
                    headers=self.state.admin_headers(),
                    timeout=TIMEOUT,
                )
        forget(self.state)

    def summary(self) -> dict[str, Any]:
        return {"webhooks": {"subscription": self.subscription, **self.figures}}


def forget(state: ClusterState) -> None:
    """The receiver stopped and out of the cluster's state (a run's end, or what a run killed
    outright left): the cluster runs no receiver between runs."""
    proc = state.procs.pop(RECEIVER, None)
    if proc is not None:
        if proc.alive():
            proc.kill()
        state.save()


def wait_and_judge(
    rows: Callable[[], Sequence[OutboxRow]],
    dead: Callable[[], Collection[int]],
    receipts: Callable[[], list[Receipt]],
    wait: float,
    subscribed: Collection[str] | None = None,
) -> tuple[Judged, list[Receipt], float]:
    """W1's findings once nothing is lost (every row delivered or dead), or `wait` seconds on:
    the findings, the receipts judged, the seconds waited. Each look reads the outbox, the dead
    letters and the log again."""
    started = time.monotonic()
    while True:
        seen = receipts()
        judged = judge(rows(), seen, dead(), subscribed=subscribed)
        waited = time.monotonic() - started
        if not judged.lost or waited > wait:
            return judged, seen, waited
        time.sleep(0.5)


def kill_receiver(state: ClusterState, _rng: Any) -> str:
    proc = state.proc(RECEIVER)
    proc.kill()
    return f"{RECEIVER} on {HOST} killed (SIGKILL); the deliverer's attempts fail meanwhile"


def restart_receiver(state: ClusterState) -> str | None:
    proc = state.proc(RECEIVER)
    if not proc.alive():
        proc.start(Path(state.home))
        state.save()
    started = time.monotonic()
    wait_until(listening, 30, f"{RECEIVER} after restart", Path(proc.log), 0.2, alive=proc.alive)
    return f"listening again {time.monotonic() - started:.1f} s after the restart"
