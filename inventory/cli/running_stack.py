"""What the commands that work on the running stack share: finding it, saying where it was
looked for when there is none, and printing it.

The stack's state is found in one place, stack.json under INVENTORY_HOME (default ./.inventory
of the folder the command runs in), so "no stack running" said from another folder used to
look like no stack at all: the message names the folder it looked in. No stack is exit 2, as
for seed, check or migrate (a usage matter: start one, or look elsewhere), not 1.
"""

from __future__ import annotations

import os

from rich.console import Console

from inventory.cli.errors import UsageError
from inventory.local import stack_state
from inventory.local.gunicorn import service_shape
from inventory.local.servers import pid_alive

console = Console()


def where() -> str:
    """Where the state was looked for, and how to look elsewhere."""
    path = stack_state.home_dir() / stack_state.STATE_FILE
    if os.environ.get("INVENTORY_HOME"):
        return f"{path} (from INVENTORY_HOME)"
    return (
        f"{path} (./.inventory of this folder: run from the folder `inventory up` ran in, "
        "or set INVENTORY_HOME)"
    )


def no_stack(state: stack_state.StackState | None) -> str:
    """The one line for "no stack to work on", saying where it looked."""
    if state is None:
        return f"no stack running: no state in {where()}; start one with `inventory up`"
    down = [name for name, pid in state.pids.items() if not pid_alive(pid)]
    return (
        f"the stack recorded in {where()} is not running ({', '.join(down) or 'nothing'} "
        "down); `inventory down` clears it, `inventory up` starts it again"
    )


def require_stack() -> stack_state.StackState:
    state = stack_state.load_state()
    if state is None or not stack_state.is_running(state):
        raise UsageError(no_stack(state))
    return state


def print_status(state: stack_state.StackState) -> None:
    data = state.as_json()
    console.print(f"order service   {state.order_url}")
    console.print(f"stock service   {state.stock_url}")
    console.print(f"zookeeper       {state.zk_hosts}")
    console.print(f"redis           {state.redis_url}")
    if state.etcd_endpoints:
        console.print(f"etcd            {state.etcd_endpoints}")
    if state.redlock_urls:
        console.print(f"redlock         {state.redlock_urls}")
    if state.prometheus_url:
        console.print(f"prometheus      {state.prometheus_url}  (scraping both services)")
    console.print(f"order database  {state.order_database_url}")
    console.print(f"stock database  {state.stock_database_url}")
    console.print(f"lock            {state.lock_backend} / {state.lock_scope}")
    order = service_shape("order_service", state.workers, state.threads, state.lock_backend)
    console.print(
        f"gunicorn        stock service --workers {state.workers} --threads {state.threads}, "
        f"order service --workers {order[0]} --threads {order[1]}"
    )
    if state.admin_token:
        console.print(f"admin token     in {data['admin_token_in']} (admin_token)")
    running = ", ".join(f"{n}={'up' if alive else 'DOWN'}" for n, alive in data["running"].items())
    console.print(f"processes       {running or '(none started by inventory up)'}")
