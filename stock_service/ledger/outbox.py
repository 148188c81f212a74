"""Reading the outbox of stock events (stock_outbox, written in the commits that move the
levels: stock_service/core/ledger_lines.py): the rows the relay has not sent yet, and a page of
rows after an id for a consumer catching up (GET /stock-events). One shape for an event wherever
it is read: the stream entry's (every value a string; the schema is api/ledger_schemas.py's
StockEvent).

Rows are never deleted: the outbox keeps every event since it began, so a consumer can fetch
from the stock database whatever the stream lost (a Redis restarted without its data, a stream
trimmed past it by STOCK_EVENTS_MAXLEN).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, bindparam, func, select, update

from shared.database.engines import transaction
from stock_service.storage import stock_outbox

DB = "stock database"
o = stock_outbox.c

UNSENT = select(stock_outbox).where(o.sent_at.is_(None)).order_by(o.id).limit(bindparam("limit"))
MARK_SENT = (
    update(stock_outbox)
    .where(o.id.in_(bindparam("ids", expanding=True)))
    .values(sent_at=bindparam("at"))
)
AFTER = (
    select(stock_outbox).where(o.id > bindparam("after")).order_by(o.id).limit(bindparam("limit"))
)
LAST = select(func.max(o.id))
# One goods id's: the index on (goods_id, id) serves it (migration stock_0007).
GOODS_AFTER = AFTER.where(o.goods_id == bindparam("goods"))


def event_fields(row: Any) -> dict[str, str]:
    """One outbox row as a stream entry (every value a string, as Redis keeps them)."""
    return {
        "id": str(row.id),
        "goodsId": row.goods_id,
        "seq": str(row.seq),
        "kind": row.kind,
        "delta": str(row.delta),
        "level": str(row.level),
        "flag": row.flag or "",
        "reason": row.reason or "",
        "location": row.location or "",
        "time": row.created_at.isoformat(),
    }


def events_after(
    engine: Engine, after: int, limit: int, goods_id: str | None = None
) -> list[dict[str, str]]:
    """The `limit` events with an id above `after`, in id order (a goods id's ids follow its
    ledger), of one goods id when given."""
    query = AFTER if goods_id is None else GOODS_AFTER
    params: dict[str, Any] = {"after": after, "limit": limit}
    if goods_id is not None:
        params["goods"] = goods_id
    with transaction(engine, DB, read_only=True) as conn:
        return [event_fields(r) for r in conn.execute(query, params)]


def last_event_id(engine: Engine) -> int:
    """The highest event id in the outbox now (0: none yet)."""
    with transaction(engine, DB, read_only=True) as conn:
        return int(conn.execute(LAST).scalar_one_or_none() or 0)
