"""The `inventory` command line: every command, option, help text and default."""

from __future__ import annotations

from collections.abc import Callable

from inventory.cli import cluster_commands as clu
from inventory.cli import run_commands as run
from inventory.cli import stack_commands as stk
from inventory.cli import status_command as status
from inventory.cli.options import Help, Parser, at_least, between, positive_float, ratio
from shared.settings import LOCK_BACKENDS, LOCK_SCOPES

# Named here rather than imported, so `inventory --help` does not load the scenarios.
SCENARIO_NAMES = [
    "double-submit",
    "slow-stock",
    "lost-response",
    "redis-flag-lost",
    "stale-holder",
    "crash-mid-deduction",
    "zk-leader-loss",
    "unique-key-lock",
    "redlock",
    "standby",
    "redis-failover",
    "cancel",
]
# `demo herd --waiters`: each waiter is a ZooKeeper session and four threads
# (inventory/scenarios/herd.py), and the single node's herd costs grow with the square of the
# waiters: 400 took about three minutes here (both designs), 100,000 ran for ten minutes and
# 2.6 GB without getting far.
# (Named here rather than in herd.py, so that parsing does not load kazoo.)
MAX_WAITERS = 500

DESCRIPTION = (
    "Order and stock services that deduct inventory under a lock without overselling, "
    "and the tools that prove it."
)


Command = Callable[[str, str], Parser]  # adds one subcommand: name, help


def build_parser() -> Parser:
    parser = Parser(prog="inventory", description=DESCRIPTION, formatter_class=Help)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    def command(name: str, help: str) -> Parser:
        made: Parser = sub.add_parser(name, help=help, description=help, formatter_class=Help)
        return made

    for add in (_stack_commands, _checking_commands, _bench_command, _cluster_commands):
        add(command)
    return parser


def _stack_commands(command: Command) -> None:
    """The local stack and its demos: up, down, status, seed, migrate, demo."""
    p = command("up", "start the local stack in the background (state in ./.inventory)")
    p.add_argument("--workers", type=at_least(1), default=2, help="gunicorn workers per service")
    p.add_argument(
        "--threads", type=at_least(1), default=8, help="threads per stock-service worker"
    )
    p.add_argument(
        "--reconcilers",
        type=at_least(0),
        default=2,
        help="instances of the elected reconciler (one leads, the others stand by)",
    )
    p.add_argument(
        "--monitoring",
        action="store_true",
        help="also start Debian's prometheus, scraping both services (its URL in the status)",
    )
    p.set_defaults(func=stk.cmd_up)
    p = command("down", "stop what `up` started, and any stack a killed run left behind")
    p.set_defaults(func=stk.cmd_down)
    p = command("status", "URLs and addresses of the running stack; stacks left behind")
    p.add_argument("--json", action="store_true", help="as JSON")
    p.set_defaults(func=status.cmd_status)
    p = command("seed", "set stock levels on the running stack: inventory seed g1=100 g2=5")
    p.add_argument("levels", nargs="+", metavar="GOODS=NUM", help="a goods id and its level")
    p.set_defaults(func=stk.cmd_seed)
    p = command(
        "migrate",
        "migrate ORDER_DATABASE_URL and STOCK_DATABASE_URL (else the running stack's) to head",
    )
    p.set_defaults(func=stk.cmd_migrate)

    p = command("demo", "the POST /genOrder demo (starts the stack if needed), or a scenario")
    p.add_argument(
        "scenario",
        nargs="?",
        default="order",
        choices=["order", "herd", *SCENARIO_NAMES],
        help="order: one order end to end (default); herd: the article's herd effect; "
        "the others cause a fault for real (see the README)",
    )
    p.add_argument(
        "--unfenced",
        action="store_true",
        help="stale-holder, unique-key-lock, redlock: with fencing off, to show the oversell "
        "it prevents",
    )
    p.add_argument(
        "--keep",
        action="store_true",
        help="order: leave the stack it started running; scenarios and herd: keep their "
        "folder (logs, databases) and print where it is",
    )
    p.add_argument(
        "--waiters",
        # Each waiter is a ZooKeeper session and four threads, and the single node's herd
        # grows with the square: an unbounded count ran for minutes and gigabytes.
        type=between(1, MAX_WAITERS, "each waiter is a ZooKeeper session and 4 threads"),
        nargs="+",
        default=[5, 10, 20],
        help=f"herd: numbers of waiters to compare, each at most {MAX_WAITERS}",
    )
    p.add_argument(
        "--hold-ms", type=positive_float, default=10, help="herd: how long each holder holds"
    )
    p.set_defaults(func=run.cmd_demo)


def _checking_commands(command: Command) -> None:
    """What checks and settles: check, loadtest, reconcile, reconciler."""
    p = command("check", "check the invariants I1-I5 on the databases")
    p.add_argument(
        "--order-db",
        help="order database URL (default: ORDER_DATABASE_URL, else the running stack's)",
    )
    p.add_argument(
        "--stock-db",
        help="stock database URL (default: STOCK_DATABASE_URL, else the running stack's)",
    )
    p.add_argument("--goods-prefix", default="", help="only goods ids starting with this")
    p.add_argument(
        "--initial",
        nargs="*",
        metavar="GOODS=NUM",
        help="initial levels (default: the last seeded level of each goods id)",
    )
    p.add_argument("--json", action="store_true", help="as JSON")
    p.set_defaults(func=stk.cmd_check)

    p = command("loadtest", "many buyers over HTTP, then the invariant check")
    p.add_argument("--orders", type=at_least(1), default=200, help="orders to place")
    p.add_argument("--concurrency", type=at_least(1), default=32, help="concurrent buyers")
    p.add_argument("--goods", type=at_least(1), default=1, help="goods ids")
    p.add_argument("--stock", type=at_least(0), default=40, help="initial stock per goods id")
    p.add_argument("--items", type=at_least(1), default=1, help="goods ids per order")
    p.add_argument(
        "--duplicates",
        type=ratio,
        default=0.0,
        help="share of orders submitted twice with one Idempotency-Key (0-1)",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed of the buyers' choices")
    p.add_argument(
        "--cancel-rate",
        type=ratio,
        default=0.0,
        help="share of orders cancelled (0-1): half at once, racing their genOrder (by "
        "Idempotency-Key), half once placed",
    )
    p.add_argument(
        "--pay-within",
        type=at_least(1),
        default=None,
        metavar="S",
        help="every order a hold to pay within S seconds; two thirds of those not cancelled "
        "are paid, the rest left to expire (the stack's reconcilers cancel them)",
    )
    p.add_argument(
        "--lock",
        choices=LOCK_BACKENDS,
        help="start a stack of its own for the run with this LOCK_BACKEND (without --lock or "
        "--scope: the running stack, else a new one with zookeeper/sku; database: needs "
        "STOCK_DATABASE_URL on PostgreSQL or MySQL)",
    )
    p.add_argument(
        "--scope",
        choices=LOCK_SCOPES,
        help="start a stack of its own for the run with this LOCK_SCOPE",
    )
    p.add_argument("--report", metavar="DIR", help="write loadtest.json and loadtest.png here")
    p.add_argument(
        "--keep", action="store_true", help="keep the folder of a stack started for the run"
    )
    p.set_defaults(func=run.cmd_loadtest)

    p = command("reconcile", "one pass by hand: settle every PENDING order from the stock database")
    p.add_argument(
        "--older-than",
        type=positive_float,
        default=60,
        help="only orders older than this many seconds (default 60: no request still runs)",
    )
    p.set_defaults(func=stk.cmd_reconcile)

    p = command(
        "reconciler",
        "reconciliation as a service: one elected leader reconciles, the others stand by",
    )
    p.add_argument(
        "--name", default=None, help="this instance's name in the election (default host:pid)"
    )
    p.set_defaults(func=stk.cmd_reconciler)


def _bench_command(command: Command) -> None:
    """The benchmark."""
    p = command("bench", "throughput and latency against the limits of the parts")
    p.add_argument(
        "--quick",
        action="store_true",
        # 6-8 minutes on 2 cores as run in issue 24 (each backend twice, 3 rounds, fresh stacks).
        help="fewer requests and configurations (about 6-8 minutes on 2 cores)",
    )
    p.add_argument(
        "--order-path",
        action="store_true",
        help="only what an order costs: POST /genOrder next to PUT /reduceStock on the "
        "ZooKeeper stack, and the no-lock baseline (a few minutes)",
    )
    p.add_argument(
        "--auth",
        action="store_true",
        help="only what authentication costs: ZooKeeper digest, Redis ACL users, PostgreSQL "
        "scram-sha-256 and the stock service's token, each with and without (about a minute)",
    )
    p.add_argument(
        "--requests",
        type=at_least(1),
        help="requests per load per round (default 1200; --quick 600; --order-path 1500)",
    )
    p.add_argument("--rounds", type=at_least(1), help="rounds; rates are their median (default 3)")
    p.add_argument("--concurrency", type=at_least(1), help="concurrent callers (default 16)")
    p.add_argument(
        "--database-url",
        metavar="URL",
        help="a PostgreSQL or MySQL server to run on instead of SQLite (e.g. "
        "postgresql+psycopg://postgres@127.0.0.1:5432/test): the bench creates a database of "
        "its own there, migrates and fills it, and drops it afterwards",
    )
    p.add_argument("--keep", action="store_true", help="keep the bench's folder (logs)")
    p.add_argument("--report", metavar="DIR", help="write bench.json and bench.png here")
    p.set_defaults(func=run.cmd_bench)


def _cluster_commands(command: Command) -> None:
    """The cluster in network namespaces and chaos on it."""
    p = command(
        "cluster",
        "a multi-node cluster in network namespaces (root): up, down, status; configs writes "
        "its configuration files with placeholder secrets (deploy/cluster/)",
    )
    p.add_argument("action", choices=["up", "down", "status", "configs"])
    p.add_argument("--into", metavar="DIR", default="deploy/cluster", help="configs: where they go")
    p.add_argument(
        "--workers", type=at_least(1), default=2, help="up: gunicorn workers per replica"
    )
    p.add_argument("--threads", type=at_least(1), default=8, help="up: threads per stock worker")
    p.add_argument("--lock", choices=["zookeeper", "redis", "none"], help="up: LOCK_BACKEND")
    p.add_argument(
        "--no-fencing", dest="fencing", action="store_false", default=None, help="up: FENCING=false"
    )
    p.add_argument("--json", action="store_true", help="status: as JSON")
    p.set_defaults(func=clu.cmd_cluster)

    p = command("chaos", "load on the cluster while a nemesis injects faults; then check")
    p.add_argument(
        "--faults",
        metavar="A,B,C",
        help="faults to inject, in order (default: all; "
        "--quick: a few); see the README for the names",
    )
    p.add_argument("--quick", action="store_true", help="a few faults, a few minutes (for CI)")
    p.add_argument(
        "--orders",
        type=at_least(1),
        help="keep the load on until this many orders (default 10000; --quick 500)",
    )
    p.add_argument(
        "--lock",
        choices=["zookeeper", "redis", "none"],
        help="run the replicas with this LOCK_BACKEND for the run",
    )
    p.add_argument(
        "--no-fencing", action="store_true", help="run the replicas with FENCING=false for the run"
    )
    p.add_argument("--seed", type=int, default=1, help="random seed of buyers and nemesis")
    p.add_argument("--report", metavar="DIR", default="chaos-report", help="where the report goes")
    p.set_defaults(func=clu.cmd_chaos)
