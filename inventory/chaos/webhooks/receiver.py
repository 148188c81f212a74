"""The chaos run's webhook receiver, a program on a host of the cluster:

    python -m inventory.chaos.webhooks.receiver --port 9090 --log receipts.jsonl --secret-file F

Every delivery is verified with the subscription's secret (read from a file the owner alone
may read, never from the command line), appended to the log and fsynced, then answered: 200
for a good signature, 401 for a bad one (receipts.py). The nemesis kills it (SIGKILL) and starts
it again on the same log: what it answered 2xx before it died is on disk.
"""

from __future__ import annotations

import argparse
from http.server import ThreadingHTTPServer
from pathlib import Path

from inventory.chaos.webhooks.receipts import ReceiptLog, answer_valid, handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m inventory.chaos.webhooks.receiver")
    parser.add_argument("--host", default="0.0.0.0")  # inside its own host
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--secret-file", type=Path, required=True)
    args = parser.parse_args(argv)
    secret = args.secret_file.read_text().strip()
    log = ReceiptLog(args.log)
    server = ThreadingHTTPServer((args.host, args.port), handler(secret, answer_valid, log.append))
    server.daemon_threads = True
    print(f"receiving on {args.host}:{args.port}, log {args.log}", flush=True)
    try:
        server.serve_forever(0.2)
    finally:
        server.server_close()
        log.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
