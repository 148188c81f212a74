"""The roles each program of the cluster logs in to PostgreSQL as, their databases, and what each
may touch (least privilege; the logins' pg_hba lines are pg_ha.py's). Run by `cluster up` as the
superuser, on the primary, from the operator's console."""

from __future__ import annotations

import psycopg
from psycopg import sql

from inventory.cluster.pg_ha import OWNED, SERVICE_ROLES, libpq
from inventory.cluster.secrets import Secrets

RECONCILER_GRANTS = (
    "GRANT SELECT, UPDATE ON orders, reconciler_fence TO reconciler",
    "GRANT SELECT ON order_details TO reconciler",
    # a partial or located order it confirms: each line's units filled and where they came
    # from, written with the move (order_service/storage/fill_store.py)
    "GRANT UPDATE (filled) ON order_details TO reconciler",
    "GRANT INSERT ON order_allocation TO reconciler",
    # a paid hold whose release the stock service has not acknowledged: found and, once
    # released, its note removed (order_service/settling/reconcile.py)
    "GRANT SELECT, DELETE ON hold_release TO reconciler",
    # reservations: a pending one settled (held or failed), a held one expired, the return of
    # an expired or released one's units recorded; each read back with its lines
    # (order_service/settling/reservations.py)
    "GRANT SELECT ON reservations, reservation_lines TO reconciler",
    "GRANT UPDATE (state, reason, updated_at, expires_at, allocations, returned_at) "
    "ON reservations TO reconciler",
)
# The relays read the outbox and mark its rows sent: no other table, no other column.
RELAY_GRANTS = ("GRANT SELECT, UPDATE (sent_at) ON stock_outbox TO relay",)
# The deliverers of webhooks read the outbox and the subscriptions, note how far each
# subscription's events were fanned out, and write each event's delivery to each subscriber,
# pruning the delivered ones after a day (stock_service/webhooks/): the subscriptions
# themselves are the stock service's to make.
DELIVERER_GRANTS = (
    "GRANT SELECT ON stock_outbox TO deliverer",
    "GRANT SELECT, UPDATE (fanned_to) ON webhook_subscription TO deliverer",
    "GRANT SELECT, INSERT, UPDATE, DELETE ON webhook_delivery TO deliverer",
)


def create_roles_and_databases(secrets: Secrets) -> None:
    """A login role per service and one for the reconcilers; a database per service owned by
    its role; no one else may connect to it (PUBLIC's CONNECT revoked)."""
    with psycopg.connect(libpq("postgres", secrets), autocommit=True) as conn:
        for role in SERVICE_ROLES:
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
            verb = "ALTER" if exists else "CREATE"
            conn.execute(
                sql.SQL(verb + " ROLE {} LOGIN PASSWORD {}").format(
                    sql.Identifier(role), sql.Literal(secrets.pg[role])
                )
            )
        for database in OWNED:  # each database's owner is the role of the same name
            found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,))
            if found.fetchone() is None:
                conn.execute(
                    sql.SQL("CREATE DATABASE {} OWNER {}").format(
                        sql.Identifier(database), sql.Identifier(database)
                    )
                )
            conn.execute(
                sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(sql.Identifier(database))
            )
        conn.execute("GRANT CONNECT ON DATABASE orders TO reconciler")
        conn.execute("GRANT CONNECT ON DATABASE stock TO relay")
        conn.execute("GRANT CONNECT ON DATABASE stock TO deliverer")


def grant_programs(secrets: Secrets) -> None:
    """After the migrations (the tables are the owner roles'): what the reconcilers read and
    move of the orders, what the relays read and mark of the stock outbox, and what the
    deliverers read and write of the webhooks; nothing else."""
    for database, grants in (
        ("orders", RECONCILER_GRANTS),
        ("stock", RELAY_GRANTS + DELIVERER_GRANTS),
    ):
        with psycopg.connect(libpq(database, secrets), autocommit=True) as conn:
            for grant in grants:
                conn.execute(grant)
