"""Finding what to fault: the stock worker that is inside its write transaction right now.

pg_stat_activity names the connection of a transaction that has written (it has an xid); `ss`
inside the replica's namespace names the process that owns that connection's port.
"""

from __future__ import annotations

import re
import time

from inventory.cluster import netns, nodes, topology

WRITERS = (
    "SELECT host(client_addr), client_port FROM pg_stat_activity "
    "WHERE datname = 'stock' AND backend_xid IS NOT NULL AND client_addr IS NOT NULL"
)


def writer_in_transaction(within: float) -> tuple[str, int] | None:
    import psycopg

    stock_hosts = {h.address: h for h in topology.by_role("stock")}
    deadline = time.monotonic() + within
    with psycopg.connect(nodes.libpq("stock"), autocommit=True) as conn:
        while time.monotonic() < deadline:
            for address, port in conn.execute(WRITERS).fetchall():
                stock_host = stock_hosts.get(address)
                pid = stock_host and socket_owner(stock_host.namespace, port)
                if stock_host and pid:
                    return stock_host.name, pid
            time.sleep(0.001)
    return None


def socket_owner(namespace: str, port: int) -> int | None:
    out = netns.run(
        ["ip", "netns", "exec", namespace, "ss", "-tnpH", f"sport = :{port}"], check=False
    ).stdout
    found = re.search(r"pid=(\d+)", out)
    return int(found.group(1)) if found else None
