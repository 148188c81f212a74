"""`inventory events`: the stock events as the relay publishes them (the Redis Stream
STOCK_EVENTS_STREAM of the running stack, or of REDIS_URL), one line each, until ^C."""

from __future__ import annotations

import argparse
import os
from typing import Any

from rich.console import Console

from inventory.cli.errors import UsageError
from inventory.cli.options import at_least
from inventory.local import stack_state
from shared.config.settings import Settings

NAME = "events"
SUMMARY = "tail the stock events (deducted, returned, adjusted, low/out of/back in stock)"

console = Console()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--from-start", action="store_true", help="from the stream's oldest event, not new ones"
    )
    parser.add_argument(
        "--count", type=at_least(1), default=None, help="stop after this many events"
    )
    parser.add_argument("--goods", default=None, help="only this goods id's events")


def run(args: argparse.Namespace) -> int:
    from shared.redis_client import make_redis

    state = stack_state.load_state()
    if state is None and not os.environ.get("REDIS_URL"):
        raise UsageError("no stack to read: start one with `inventory up`, or set REDIS_URL")
    settings = Settings.from_env({**(state.env() if state else {}), **os.environ})
    client = make_redis(settings.redis_url)
    stream = settings.stock_events_stream
    last, shown = ("0" if args.from_start else "$"), 0
    console.print(f"stock events from {stream} ({'the start' if args.from_start else 'now'}):")
    try:
        while args.count is None or shown < args.count:
            found: Any = client.xread({stream: last}, block=1000, count=100) or []
            for _name, entries in found:
                for entry_id, fields in entries:
                    last = entry_id
                    if args.goods and fields.get("goodsId") != args.goods:
                        continue
                    console.print(line(fields), highlight=False)
                    shown += 1
    except KeyboardInterrupt:
        pass
    finally:
        client.close()
    return 0


def line(fields: dict[str, str]) -> str:
    what = fields.get("flag") or fields.get("reason") or ""
    return (
        f"{fields.get('time', '')}  #{fields.get('id')}  {fields.get('goodsId')} "
        f"seq {fields.get('seq')}  {fields.get('kind'):<13} {int(fields.get('delta', 0)):+d} "
        f"-> {fields.get('level')}  {what}"
    )
