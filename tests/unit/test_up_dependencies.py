"""`inventory up` pointed at a server that is not there fails at once, naming it: it used to
start everything else, wait 60 s for a readiness that never came, then print "stock_service
not ready" and twenty lines of log."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from inventory.cli import main
from inventory.local.dependencies import check_dependencies, redis_addresses, zookeeper_addresses
from inventory.local.servers import ServerError

VARIABLES = ("ZK_HOSTS", "REDIS_URL", "ORDER_DATABASE_URL", "STOCK_DATABASE_URL", "LOCK_BACKEND")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("INVENTORY_HOME", str(tmp_path / "home"))
    for variable in VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


@pytest.fixture
def listening() -> Iterator[int]:
    """A port something listens on."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("ZK_HOSTS", "127.0.0.1:1", "ZooKeeper at ZK_HOSTS=127.0.0.1:1 does not answer"),
        ("REDIS_URL", "redis://:pw@127.0.0.1:1/0", "Redis at REDIS_URL=redis://***@127.0.0.1:1/0"),
    ],
)
def test_up_with_a_server_that_does_not_answer_fails_at_once_naming_it(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    variable: str,
    value: str,
    named: str,
) -> None:
    monkeypatch.setenv(variable, value)
    started = time.monotonic()
    code = main(["up"])
    took = time.monotonic() - started
    err = " ".join(capsys.readouterr().err.split())
    assert code == 1, err
    assert named in err and f"unset {variable}" in err, err
    assert "pw" not in err
    assert took < 10, f"{took:.0f} s"
    assert not home.exists()  # nothing was started, not even its folder


def test_a_server_that_answers_passes(listening: int) -> None:
    env = {
        "ZK_HOSTS": f"127.0.0.1:1,127.0.0.1:{listening}",
        "REDIS_URL": f"redis://127.0.0.1:{listening}/0",
    }
    check_dependencies(env, "zookeeper")  # one ZooKeeper of the ensemble answering is enough
    with pytest.raises(ServerError, match=re.escape("ETCD_ENDPOINTS=http://127.0.0.1:1")):
        check_dependencies({**env, "ETCD_ENDPOINTS": "http://127.0.0.1:1"}, "etcd")


def test_addresses_are_read_as_the_clients_read_them() -> None:
    assert zookeeper_addresses("a:1,b:2/chroot") == [("a", 1), ("b", 2)]
    assert zookeeper_addresses("zk") == [("zk", 2181)]
    assert redis_addresses("redis://u:p@r:6390/0") == [("r", 6390)]
    assert redis_addresses("redis+sentinel://s1:1,s2/mymaster") == [("s1", 1), ("s2", 26379)]
