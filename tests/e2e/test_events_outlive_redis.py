"""The stock events outlive the stack's Redis: after orders, a restock and a cancel, with the
relays' every event marked sent, the stack is stopped and started again in the same home
(`inventory down`, `inventory up`), and then its Redis is killed (SIGKILL) and the stack
started again; each time `inventory check` finds every outbox row in the stream (I10 valid).
Before, the stack's Redis kept nothing on disk: I10 VIOLATED, every row lost."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from inventory.check.events_source import unsent_rows
from inventory.local import stack_state
from inventory.local.client import StackClient
from inventory.local.servers import pid_alive
from shared.database.engines import make_engine
from tests.e2e.test_stack import run_cli
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e


def up(home: Path) -> stack_state.StackState:
    started = run_cli(home, "up", "--relays", "1")
    assert started.returncode == 0, started.stdout + started.stderr
    state = stack_state.load_state(home)
    assert state is not None
    return state


def events_check(home: Path) -> dict[str, Any]:
    """`inventory check`'s I10: it ran (the stack has a relay), and all checks held."""
    checked = run_cli(home, "check", "--events-wait", "30", "--json")
    [i10] = [r for r in json.loads(checked.stdout) if r["invariant"] == "I10"]
    assert checked.returncode == 0, i10["detail"]
    return i10  # type: ignore[no-any-return]


def test_every_event_sent_is_still_in_the_stream_after_redis_restarts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    state = up(home)
    try:
        client = StackClient(state)
        for goods in ("ev-phone", "ev-case"):
            client.seed(goods, 5)
        placed = client.gen_order({"userId": "u1", "items": [{"goodsId": "ev-phone", "num": 2}]})
        assert placed.status_code == 200, placed.text
        assert client.adjust("ev-case", delta=3, reason="restock").status_code == 201
        assert client.cancel(placed.json()["orderId"]).status_code == 200
        client.close()
        engine = make_engine(state.stock_database_url)
        wait_for(lambda: unsent_rows(engine, "") == 0, "the relay sent every event", 30)
        engine.dispose()
        first = events_check(home)
        assert first["numbers"]["outbox_rows"] == 5  # 2 seeds, a deduction, a restock, a return

        down = run_cli(home, "down")
        assert down.returncode == 0, down.stdout + down.stderr
        state = up(home)
        assert events_check(home)["numbers"] == first["numbers"]  # was: I10 VIOLATED, all lost

        os.kill(state.pids["redis"], signal.SIGKILL)  # no shutdown: what it had written
        wait_for(lambda: not pid_alive(state.pids["redis"]), "Redis killed", 10)
        run_cli(home, "down")
        state = up(home)
        assert events_check(home)["numbers"] == first["numbers"]
    finally:
        run_cli(home, "down")
