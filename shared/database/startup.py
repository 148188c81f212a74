"""Start-up schema policy shared by both services.

MIGRATE_ON_START=true: run `alembic upgrade head` (with retries while the database comes up).
Otherwise (the default) refuse to start on a database that is behind, and say how to migrate:
with several gunicorn workers and replicas, one migration step (`inventory migrate`, or the
compose file's `migrate` service) is safer than every process racing to migrate.
"""

from __future__ import annotations

import logging
import time

from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError

import migrations

log = logging.getLogger(__name__)


class SchemaOutOfDate(RuntimeError):
    pass


def prepare_schema(engine: Engine, history: str, migrate: bool, attempts: int = 10) -> None:
    for attempt in range(1, attempts + 1):
        try:
            if migrate:
                migrations.upgrade(str(engine.url.render_as_string(hide_password=False)), history)
                return
            if migrations.pending(engine, history):
                raise SchemaOutOfDate(
                    f"the {history} database is not at the latest migration; run "
                    f"`inventory migrate` (or set MIGRATE_ON_START=true)"
                )
            return
        except OperationalError as exc:
            if attempt == attempts:
                raise
            log.warning("%s database not reachable yet (%s); retrying", history, exc.orig)
            time.sleep(min(0.5 * attempt, 3.0))
