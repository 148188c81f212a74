"""`python -m inventory.chaos.intruder stranger | order-replica`: every attempt, as one JSON list
on stdout. Run inside a host's namespace by the nemesis (inventory/chaos/intruder/__init__.py)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from urllib.parse import unquote, urlsplit

from sqlalchemy.engine import make_url

from inventory.chaos.intruder.on_http import http_attempts
from inventory.chaos.intruder.on_postgres import postgres_attempts
from inventory.chaos.intruder.on_redis import redis_attempts
from inventory.chaos.intruder.on_zookeeper import zookeeper_attempts


def main() -> None:
    kind = sys.argv[1] if len(sys.argv) > 1 else "stranger"
    if kind == "impostor":  # a valid certificate of the cluster's CA, for another name
        from inventory.chaos.intruder.impostor import main as impostor

        impostor()
        return
    if kind == "stranger":
        attempts = zookeeper_attempts() + redis_attempts() + postgres_attempts() + http_attempts()
    else:  # order-replica: the order service's credentials, from its environment
        redis_url = urlsplit(os.environ["REDIS_URL"])
        database = make_url(os.environ["ORDER_DATABASE_URL"])
        attempts = (
            zookeeper_attempts()  # the order service has no ZooKeeper identity
            + redis_attempts(unquote(redis_url.username or ""), unquote(redis_url.password or ""))
            + postgres_attempts((str(database.username), str(database.password)))
            + http_attempts(os.environ["STOCK_SERVICE_TOKEN"])
        )
    print(json.dumps([asdict(a) for a in attempts]))


if __name__ == "__main__":
    main()
