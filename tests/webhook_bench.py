"""A bench of one subscription's webhook throughput (not collected by pytest: slow).

    PYTHONPATH=. python tests/webhook_bench.py [--backend postgresql] [--trees A B] [--profile]

A fresh database on the backend (conftest's servers), one subscription to every goods id, a
receiver on 127.0.0.1 answering 200 at once (ThreadingHTTPServer), and EVENTS outbox rows
over GOODS goods ids plus HOT goods ids with many each, written before the deliverer starts:
the time until each event was delivered once gives events/s, and the engine's transactions
and statements counted over the run give their number per event. One leader (deliverer.lead
with an elector that always leads: no ZooKeeper). Each goods id's events are checked to have
first arrived in seq order. `--trees` runs the bench once per source tree (each a
PYTHONPATH, e.g. a worktree of main) and prints them side by side; `--profile` prints the
leader thread's cProfile (its own time: the POSTs are the pool's)."""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import sqlalchemy as sa

GOODS, PER_GOODS, HOT, PER_HOT = 300, 8, 3, 200  # 2,400 + 600 events
DEADLINE = 300.0


class Always:
    """An elector that leads until told otherwise."""

    def is_leader(self) -> bool:
        return True


def run(backend: str, profile: bool) -> dict[str, Any]:
    from shared.config.settings import Settings
    from shared.database.engines import make_engine
    from stock_service.storage.tables import stock_outbox
    from stock_service.webhooks import Subscriptions
    from stock_service.webhooks import deliverer as module
    from tests.fresh_database import fresh_database

    got: dict[str, int] = {}
    order: dict[str, list[int]] = defaultdict(list)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a real receiver would

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                if body["id"] not in got:
                    got[body["id"]] = 1
                    order[body["goodsId"]].append(int(body["seq"]))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    lines = [(f"g{i}", PER_GOODS) for i in range(GOODS)] + [
        (f"hot{i}", PER_HOT) for i in range(HOT)
    ]
    events = [goods for goods, n in lines for _ in range(n)]
    random.Random(7).shuffle(events)
    seqs: dict[str, int] = defaultdict(int)
    rows = []
    for goods in events:
        seqs[goods] += 1
        rows.append(
            {
                "goods_id": goods,
                "seq": seqs[goods],
                "kind": "adjusted",
                "delta": 1,
                "level": seqs[goods],
                "flag": None,
                "reason": "restock",
                "created_at": datetime.utcnow(),
            }
        )
    with tempfile.TemporaryDirectory() as folder:
        made = fresh_database(backend, Path(folder), "stock")
        database = next(made)
        try:
            settings = Settings(
                stock_database_url=database,
                order_database_url=database,
                webhook_allow_private=True,
                log_level="WARNING",
            )
            engine = make_engine(database, application="bench")
            Subscriptions(engine).create(url, [], [], None)
            with engine.begin() as conn:
                conn.execute(sa.insert(stock_outbox), rows)
            counted = {"transactions": 0, "statements": 0}
            sa.event.listen(
                engine,
                "begin",
                lambda conn: counted.__setitem__("transactions", counted["transactions"] + 1),
            )
            sa.event.listen(
                engine,
                "before_cursor_execute",
                lambda *a: counted.__setitem__("statements", counted["statements"] + 1),
            )
            stop = threading.Event()
            profiler = cProfile.Profile() if profile else None

            def lead() -> None:
                if profiler:
                    profiler.enable()
                module.lead(settings, "bench", Always(), engine, stop)  # type: ignore[arg-type]
                if profiler:
                    profiler.disable()

            started = time.monotonic()
            thread = threading.Thread(target=lead, daemon=True)
            thread.start()
            while len(got) < len(rows) and time.monotonic() - started < DEADLINE:
                time.sleep(0.01)
            took = time.monotonic() - started
            stop.set()
            thread.join(30)
            engine.dispose()
        finally:
            next(made, None)  # the rest of the generator: the database dropped
    server.shutdown()
    if profiler:
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(25)
    in_order = all(o == sorted(o) for o in order.values())
    return {
        "delivered": len(got),
        "events": len(rows),
        "seconds": round(took, 2),
        "events_per_s": round(len(got) / took, 1),
        "transactions_per_event": round(counted["transactions"] / max(len(got), 1), 3),
        "statements_per_event": round(counted["statements"] / max(len(got), 1), 2),
        "in_seq_order": in_order,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--backend", default="postgresql", choices=["postgresql", "mysql", "sqlite"]
    )
    parser.add_argument("--trees", nargs="*", help="source trees to bench side by side")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    if not args.trees:
        print(json.dumps(run(args.backend, args.profile)))
        return 0
    here = Path(__file__).resolve()
    for tree in args.trees:
        env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{here.parent.parent}"}
        answer = subprocess.run(
            [sys.executable, str(here), "--backend", args.backend],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        result = (
            answer.stdout.strip().splitlines()[-1]
            if answer.stdout.strip()
            else answer.stderr[-2000:]
        )
        print(f"{args.backend} {tree}: {result}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
