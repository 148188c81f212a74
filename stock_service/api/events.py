"""GET /stock-events: the stock events from the stock database's outbox, after a given id, in
pages: what a consumer fetches when the Redis Stream lost events (a Redis restarted without its
data, a stream trimmed past them), or to start from the beginning. The same events as the
stream's entries, in the same order (id order, so each goods id's in ledger order).

Open, as the other reads of the ledger are (GET /stock/{goodsId}/history tells the same
entries one goods id at a time): STOCK_SERVICE_TOKEN is the order service's and the
reconcilers' identity, which may deduct, void and return, and a consumer given it could do
all that. A consumer in the cluster has its own identity for the stream (the Redis user
`events`), and reads here without one."""

from __future__ import annotations

from typing import Any

from apiflask import APIBlueprint
from flask import Response, current_app, jsonify
from pydantic import BaseModel, Field

from shared.web.api_app import answers
from shared.web.schemas import Answer, ErrorBody, Unavailable
from stock_service.api.ledger_schemas import StockEvent
from stock_service.ledger import events_after, last_event_id

LIMIT, MAX_LIMIT = 100, 1000


class EventsQuery(BaseModel):
    # Bounded by the column's type (BIGINT): a larger number is no id.
    after: int = Field(0, ge=0, le=2**63 - 1, description="the events with an id above this")
    limit: int = Field(LIMIT, ge=1, le=MAX_LIMIT, description="events in the page")


class StockEvents(Answer):
    events: list[StockEvent] = Field(description="in id order: each goods id's in ledger order")
    next: int = Field(description="`after` for the next page (this one's last id, or `after`)")
    last: int = Field(description="the highest event id in the outbox now (0: none yet)")


def events_routes() -> APIBlueprint:
    bp = APIBlueprint("events", __name__, tag="Ledger")

    @bp.get("/stock-events")
    @bp.input(EventsQuery, location="query")
    @bp.doc(
        responses=answers(
            {
                200: (StockEvents, "A page of events; none when `after` is the last"),
                400: (ErrorBody, "`after` or `limit` out of its range: the error names it"),
                503: (Unavailable, "The stock database is down"),
            }
        )
    )
    def stock_events(query_data: Any) -> Response:
        """The stock events after an id, oldest first, as the stream has them: to catch up
        on what the stream lost. An event whose commit came after its id was given (a write
        paused inside its transaction) can appear below a `next` already read: it was not
        sent when that page was read, so the stream brings it (docs/ledger.md)."""
        engine = current_app.extensions["stock"].engine
        events = events_after(engine, query_data.after, query_data.limit)
        last = last_event_id(engine)
        body = {
            "events": events,
            "next": int(events[-1]["id"]) if events else query_data.after,
            "last": int(last),
        }
        return jsonify(body)

    return bp
