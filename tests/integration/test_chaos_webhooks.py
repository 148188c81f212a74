"""The chaos run's webhook receiver and W1: the check over plain data, each violation planted
once (and the same history without it valid); the receiver's log; and the receiver program for
real (a process on a free port, killed by SIGKILL and started again on its log)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from inventory.chaos.verdict import VALID, VIOLATED
from inventory.chaos.webhooks.check import judge, verdict
from inventory.chaos.webhooks.receipts import Receipt, ReceiptLog, read_receipts, receipt_of
from inventory.chaos.webhooks.subscriber import subscribed
from inventory.chaos.workload import make_goods
from inventory.check.events import OutboxRow
from inventory.check.events_source import read_outbox
from inventory.local.servers import free_port, port_open, wait_until
from stock_service.webhooks import sign

SECRET = "s3cret-of-the-subscription"
ROWS = [
    OutboxRow(1, "a", 1, "deducted", -1, 9),
    OutboxRow(2, "b", 1, "adjusted", 5, 5),
    OutboxRow(3, "a", 2, "deducted", -1, 8),
    OutboxRow(4, "a", 2, "low_stock", 0, 8),  # a threshold event shares its entry's seq
    OutboxRow(5, "b", 2, "deducted", -2, 3),
]


def got(row: OutboxRow, status: int = 200, valid: bool = True) -> Receipt:
    return Receipt(row.id, row.goods_id, row.seq, row.kind, valid, status)


def test_every_row_delivered_in_seq_order_with_repeats_is_valid() -> None:
    log = [got(ROWS[0], 503), got(ROWS[0]), got(ROWS[1]), got(ROWS[0]), *map(got, ROWS[2:])]
    judged = judge(ROWS, log, dead=())
    assert judged.violations == []
    assert judged.numbers == {"rows": 5, "delivered": 5, "repeats": 1, "dead": 0, "replayed": 0}
    assert verdict(judged).verdict == VALID


def test_a_row_neither_delivered_nor_dead_lettered_is_lost() -> None:
    log = [got(r) for r in ROWS if r.id != 3]
    assert judge(ROWS, log, dead={3}).violations == []  # dead-lettered: accounted for
    judged = judge(ROWS, log, dead=())
    assert [v.split(":")[0] for v in judged.lost] == ["#3 a seq 2 deducted"]
    assert verdict(judged).verdict == VIOLATED
    # answered 503 only: not delivered either
    assert judge(ROWS, [*log, got(ROWS[2], 503)], dead=()).lost == judged.lost


def test_a_bad_signature_is_a_violation_even_beside_a_good_copy() -> None:
    log = [*map(got, ROWS), got(ROWS[4], 401, valid=False)]
    judged = judge(ROWS, log, dead=())
    assert judged.bad_signatures == ["#5 b seq 2: bad signature"]
    # a delivery accepted only with a bad signature does not count as delivered
    judged = judge(ROWS, [*map(got, ROWS[:4]), got(ROWS[4], 200, valid=False)], dead=())
    assert len(judged.bad_signatures) == 1 and len(judged.lost) == 1


def test_a_lower_seq_first_received_after_a_higher_is_out_of_order_unless_replayed() -> None:
    log = [got(ROWS[1]), got(ROWS[2]), got(ROWS[3]), got(ROWS[0]), got(ROWS[4])]
    judged = judge(ROWS, log, dead=())
    assert judged.out_of_order == ["a: #1 seq 1 first received after #4 seq 2"]
    assert judge(ROWS, log, dead=(), replayed={1}).violations == []
    # a repeat of an older event after a newer one is no first receipt: in order
    again = [*map(got, ROWS), got(ROWS[0])]
    assert judge(ROWS, again, dead=()).violations == []


def test_an_event_that_is_no_row_of_the_outbox_is_invented() -> None:
    log = [*map(got, ROWS), Receipt(9, "a", 3, "deducted", True, 200)]
    assert judge(ROWS, log, dead=()).invented == ["#9 a seq 3: no outbox row"]
    moved = Receipt(2, "b", 7, "adjusted", True, 200)  # row 2's id, another seq
    judged = judge(ROWS, [moved, *map(got, ROWS)], dead=())
    assert judged.invented == ["#2 b seq 7: its row is b seq 1"]


def test_a_subscription_naming_goods_ids_owes_only_theirs_and_gets_no_other() -> None:
    """A subscription with a goodsIds filter: the rows of the other goods ids are owed to no
    one, and a delivery of one of them is a violation (the filter did not hold)."""
    only_a = [got(r) for r in ROWS if r.goods_id == "a"]
    judged = judge(ROWS, only_a, dead=(), subscribed=["a"])
    assert judged.violations == [] and judged.numbers["rows"] == 3
    assert [v.split(":")[0] for v in judge(ROWS, only_a, dead=()).lost] == [
        "#2 b seq 1 adjusted",
        "#5 b seq 2 deducted",
    ]
    judged = judge(ROWS, [*only_a, got(ROWS[1])], dead=(), subscribed=["a"])
    assert judged.invented == ["#2 b seq 1: not subscribed"]


def test_the_runs_subscription_names_every_kind_of_goods_and_a_share_of_the_rest() -> None:
    goods = make_goods("w1-", hot=2, others=10, big=10, located=1, owed=1, reserved=1, limited=1)
    named = subscribed(goods)
    kinds = [goods.hot, goods.scarce, goods.located, goods.owed, goods.reserved, goods.limited]
    assert all(g in named for kind in kinds for g in kind)
    assert 0 < len(set(named) & set(goods.others)) < len(goods.others)
    assert 0 < len(set(named) & set(goods.big)) < len(goods.big)
    assert len(named) <= 1000  # the most goods ids a subscription may name


def event_body(row: OutboxRow) -> bytes:
    fields = {"id": row.id, "goodsId": row.goods_id, "seq": row.seq, "kind": row.kind}
    return json.dumps({k: str(v) for k, v in {**fields, "delta": row.delta}.items()}).encode()


def test_a_receipt_reads_the_signed_body_and_checks_its_signature() -> None:
    body = event_body(ROWS[2])
    good = receipt_of(SECRET, body, {"x-inventory-signature": sign(SECRET, body)}, 200)
    assert (good.event_id, good.goods_id, good.seq, good.valid) == (3, "a", 2, True)
    forged = receipt_of(SECRET, body, {"X-Inventory-Signature": sign("another", body)})
    assert not forged.valid
    torn = receipt_of(SECRET, b"{", {"X-Inventory-Event-Id": "7"})
    assert (torn.event_id, torn.valid, torn.seq) == (7, False, -1)


def test_the_log_drops_only_a_torn_last_line(tmp_path: Path) -> None:
    log = ReceiptLog(tmp_path / "r.jsonl")
    for row in ROWS[:2]:
        log.append(got(row))
    log.close()
    with open(tmp_path / "r.jsonl", "a") as out:
        out.write('{"event_id": 3, "goods')  # killed mid-write
    assert [r.event_id for r in read_receipts(tmp_path / "r.jsonl")] == [1, 2]
    with open(tmp_path / "r.jsonl", "a") as out:
        out.write("\n" + got(ROWS[2]).line() + "\n")
    with pytest.raises(ValueError):
        read_receipts(tmp_path / "r.jsonl")


def test_the_receiver_program_logs_before_it_answers_and_outlives_a_kill(tmp_path: Path) -> None:
    port = free_port()
    (tmp_path / "secret").write_text(SECRET)
    argv = [
        sys.executable, "-m", "inventory.chaos.webhooks.receiver", "--host", "127.0.0.1",
        "--port", str(port), "--log", str(tmp_path / "r.jsonl"),
        "--secret-file", str(tmp_path / "secret"),
    ]  # fmt: skip

    def start() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(argv, start_new_session=True)
        wait_until(lambda: port_open(port), 20, "the receiver", alive=lambda: proc.poll() is None)
        return proc

    def post(row: OutboxRow, secret: str = SECRET) -> int:
        body = event_body(row)
        headers = {"X-Inventory-Signature": sign(secret, body), "X-Inventory-Event-Id": str(row.id)}
        url = f"http://127.0.0.1:{port}/hook"
        return httpx.post(url, content=body, headers=headers, timeout=5).status_code

    proc = start()
    try:
        assert [post(ROWS[0]), post(ROWS[1], "wrong")] == [200, 401]
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        proc = start()
        assert post(ROWS[2]) == 200
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    receipts = read_receipts(tmp_path / "r.jsonl")
    assert [(r.event_id, r.valid, r.status) for r in receipts] == [
        (1, True, 200),
        (2, False, 401),
        (3, True, 200),
    ]
    assert judge(ROWS[:3], receipts, dead=()).bad_signatures == ["#2 b seq 1: bad signature"]


def test_w1_holds_on_a_stack_whose_receiver_is_killed_and_started_again(tmp_path: Path) -> None:
    """The chaos run's path on one machine: the receiver program subscribed on a stack running
    the product's deliverer; stock moves while it is dead (SIGKILL); started again on its log,
    it gets what it missed, and W1 over its log, the outbox and the dead letters holds."""
    from inventory.chaos.webhooks.subscriber import wait_and_judge
    from inventory.local.client import StackClient
    from inventory.scenarios.rig import order_body, scenario_stack
    from inventory.scenarios.webhooks import WEBHOOK_ENV
    from shared.database.engines import make_engine

    port, log = free_port(), tmp_path / "receipts.jsonl"
    (tmp_path / "secret").write_text(SECRET)
    argv = [
        sys.executable, "-m", "inventory.chaos.webhooks.receiver", "--host", "127.0.0.1",
        "--port", str(port), "--log", str(log), "--secret-file", str(tmp_path / "secret"),
    ]  # fmt: skip

    def start() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(argv, start_new_session=True)
        wait_until(lambda: port_open(port), 20, "the receiver", alive=lambda: proc.poll() is None)
        return proc

    prefix = "w1-"
    # Enough attempts (a tenth of a second to half a second apart) to outlast the receiver's
    # death: none dead-lettered, so each event is judged by its delivery.
    env = {**WEBHOOK_ENV, "WEBHOOK_MAX_ATTEMPTS": "100"}
    with scenario_stack("w1", env, deliverers=1) as state:
        client = StackClient(state)
        engine = make_engine(state.stock_database_url)
        receiver = start()
        try:
            url = f"http://127.0.0.1:{port}/hooks"
            answer = client.stock.post("/subscriptions", json={"url": url, "secret": SECRET})
            assert answer.status_code == 201, answer.text
            subscription = answer.json()["id"]
            for goods_id in ("w1-a", "w1-b"):
                client.seed(goods_id, 20)
            assert client.gen_order(order_body("ann", "w1-a", 2)).status_code == 200
            wait_until(lambda: len(read_receipts(log)) >= 3, 20, "the first deliveries")
            os.killpg(receiver.pid, signal.SIGKILL)
            receiver.wait(10)
            killed_at = time.time()
            assert client.gen_order(order_body("bob", "w1-b", 3)).status_code == 200
            assert client.adjust("w1-a", delta=4, reason="restock").status_code == 201
            time.sleep(1.0)  # the deliverer's attempts meanwhile are refused connections
            receiver = start()

            def dead() -> set[int]:
                found = client.stock.get(f"/subscriptions/{subscription}/failed").json()
                return {int(f["eventId"]) for f in found["failed"]}

            judged, receipts, _ = wait_and_judge(
                lambda: read_outbox(engine, prefix)[0], dead, lambda: read_receipts(log), 20
            )
        finally:
            os.killpg(receiver.pid, signal.SIGKILL)
            receiver.wait(10)
            engine.dispose()
            client.close()
    assert judged.violations == [], judged.violations
    assert judged.numbers["delivered"] == judged.numbers["rows"] >= 5, judged.numbers
    assert judged.numbers["dead"] == 0
    late = [r for r in receipts if r.at > killed_at]
    assert {r.goods_id for r in late} >= {"w1-a", "w1-b"}  # sent again once it was back
