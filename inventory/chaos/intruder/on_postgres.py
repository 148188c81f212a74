"""The intruder on PostgreSQL: log in as each role and as the superuser, straight to each
database host and through the load balancers' address; with the order service's login, open
the stock database, log in as the superuser, or log in as itself without TLS (on the wire in
clear). Refused: no pg_hba entry, a failed password."""

from __future__ import annotations

from functools import partial

import psycopg

from inventory.chaos.intruder.attempt import GUESS, Attempt, attempt
from inventory.cluster import topology


def _pg_refused(exc: Exception) -> bool:
    text = str(exc)
    return any(
        word in text
        for word in (
            "no pg_hba.conf entry",
            "password authentication failed",
            "rejects connection",
            "permission denied",
        )
    )


def _connect(host: str, user: str, password: str, database: str, tls: str = "prefer") -> str:
    with psycopg.connect(
        host=host,
        port=topology.PG_PORT,
        user=user,
        password=password,
        dbname=database,
        connect_timeout=3,
        sslmode=tls,
    ) as conn:
        return str(conn.execute("SELECT current_user").fetchone())


def postgres_attempts(as_order: tuple[str, str] | None = None) -> list[Attempt]:
    attempts = []
    places = [(h.name, h.address) for h in topology.by_role("postgres")] + [
        ("the load balancers' address", topology.VIP)
    ]
    if as_order is None:
        roles = ("postgres", "orders", "stock", "reconciler", "replicator", "rewind")
        for where, address in places:
            for role in roles:
                database = {"orders": "orders", "stock": "stock", "reconciler": "orders"}.get(
                    role, "postgres"
                )
                attempts.append(
                    attempt(
                        "postgres",
                        f"log in as {role} at {where} with a guessed password",
                        partial(_connect, address, role, GUESS, database),
                        _pg_refused,
                    )
                )
        return attempts
    user, password = as_order
    for where, address in places:
        attempts.append(
            attempt(
                "postgres",
                f"as {user}, open the stock database at {where}",
                partial(_connect, address, user, password, "stock"),
                _pg_refused,
            )
        )
        attempts.append(
            attempt(
                "postgres",
                f"as {user}, its own login to its own database at {where}, without TLS",
                partial(_connect, address, user, password, "orders", "disable"),
                _pg_refused,
            )
        )
        attempts.append(
            attempt(
                "postgres",
                f"as {user}, log in as postgres at {where} with its password",
                partial(_connect, address, "postgres", password, "postgres"),
                _pg_refused,
            )
        )
    return attempts
