"""stack.json is read by other processes (`status`, `down`, the tests) while `up` saves it again
as each process starts: a reader must find the old state or the new one, whole, never an empty or
half-written file; and the file stays readable by its owner only, since it holds the admin token."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from inventory.local import stack_state


def a_state(home: Path, pids: int) -> stack_state.StackState:
    return stack_state.StackState(
        home=str(home),
        order_url="http://127.0.0.1:1",
        stock_url="http://127.0.0.1:2",
        zk_hosts="127.0.0.1:3",
        redis_url="redis://127.0.0.1:4/0",
        order_database_url="sqlite:///order.db",
        stock_database_url="sqlite:///stock.db",
        lock_backend="zookeeper",
        lock_scope="goods",
        pids={f"process{n}": n + 1 for n in range(pids)},
        admin_token="secret",
    )


def test_a_reader_never_sees_a_half_saved_state(tmp_path: Path) -> None:
    stack_state.save_state(a_state(tmp_path, 1))
    done = threading.Event()
    seen: list[int] = []
    broken: list[str] = []

    def read() -> None:
        while not done.is_set():
            text = (tmp_path / stack_state.STATE_FILE).read_text()
            try:
                seen.append(len(json.loads(text)["pids"]))
            except ValueError:
                broken.append(text)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for n in range(1, 400):
            stack_state.save_state(a_state(tmp_path, n % 40 + 1))
    finally:
        done.set()
        reader.join()
    assert not broken, f"{len(broken)} reads found a partial file, e.g. {broken[0][:80]!r}"
    assert seen, "the reader read nothing"


def test_the_saved_state_is_its_owners_alone_and_leaves_no_partial_file(tmp_path: Path) -> None:
    state = a_state(tmp_path, 3)
    stack_state.save_state(state)
    stack_state.save_state(state)
    path = tmp_path / stack_state.STATE_FILE
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == [stack_state.STATE_FILE]
    assert stack_state.load_state(tmp_path) == state
