"""A reduceStock body made a deduction request: its lines summed per goods id, the locations
its lines name, its fill; and the checks no JSON Schema states, answered 422 (or 404 for an
unknown location), with nothing written."""

from __future__ import annotations

from collections.abc import Sequence

from shared.web.http_errors import ApiError
from shared.web.schemas import merge_lines
from stock_service.core import Request
from stock_service.locations import LocationBook

FILLS = ("all", "partial", "backorder")


def deduction_request(
    flag: str,
    pairs: list[tuple[str, int]],
    places: Sequence[tuple[str, str | None]],
    hold: bool,
    fill: str,
    maximum: int,
) -> Request:
    """Repeated goods ids are summed, and must name one location (or none)."""
    if fill not in FILLS:
        raise ApiError(422, f"fill must be one of: {', '.join(FILLS)}", field="fill")
    lines = merge_lines(pairs, maximum)
    named: dict[str, str | None] = {}
    for goods_id, location in places:
        if named.setdefault(goods_id, location) != location:
            raise ApiError(
                422,
                f"the lines of {goods_id} name different locations: one line per location "
                "is one allocation, so give the goods id's units in one line",
                goodsIds=[goods_id],
            )
    locations = {g: loc for g, loc in named.items() if loc is not None}
    if fill == "backorder" and hold:
        raise ApiError(
            422,
            "fill=backorder takes no hold: a backordered line waits for units as they arrive, "
            "and a hold's clock would run out before they do",
            field="fill",
        )
    return Request(
        flag,
        lines,
        hold=hold,
        locations=locations,
        partial=fill == "partial",
        backorder=fill == "backorder",
    )


def unknown_locations(book: LocationBook, requests: Sequence[Request]) -> list[str]:
    """The locations the requests' lines name that do not exist (one query, none if no line
    names one)."""
    named = sorted({loc for r in requests for loc in r.locations.values()})
    return book.unknown(named) if named else []


def check_locations(book: LocationBook, requests: Sequence[Request]) -> None:
    """404 when a line names a location that does not exist."""
    unknown = unknown_locations(book, requests)
    if unknown:
        raise ApiError(404, f"unknown location: {', '.join(unknown)}", locations=unknown)
