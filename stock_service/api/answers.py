"""How the stock service's answers carry its rows: a flow (or return) row, the shortfalls of
a refusal, one flag's result in a batched reduceStock. The JSON names are the API's
(goodsId, num, createTime); the columns' are the database's."""

from __future__ import annotations

from typing import Any

from shared.contract import Outcome
from shared.errors import DependencyUnavailable
from shared.metrics import DEDUCTIONS
from stock_service.deduction import NotAttempted


def flow_json(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "flag": row["flag"],
        "goodsId": row["goods_id"],
        "num": row["num"],
        "fence": row["fence"],
        "createTime": row["created_at"].isoformat(),
    }


def shortfalls_json(result: Any) -> list[dict[str, Any]]:
    return [
        {
            "goodsId": s.goods_id,
            "requested": s.requested,
            "available": s.available,
            "seedVersion": s.seed_version,
        }
        for s in result.shortfalls
    ]


def allocations_json(allocations: list[tuple[str, str, int]]) -> list[dict[str, Any]]:
    return [{"goodsId": g, "location": loc, "num": n} for g, loc, n in allocations]


def flag_result(flag: str, result: Any, backend: str) -> dict[str, Any]:
    """One flag's result in a batched answer (what the single route's body would say)."""
    if isinstance(result, NotAttempted):  # retryable: nothing written, its flag still live
        DEDUCTIONS.labels(Outcome.NOT_ATTEMPTED.value).inc()
        body: dict[str, Any] = {
            "flag": flag,
            "outcome": Outcome.NOT_ATTEMPTED,
            "error": result.error,
            "dependency": "lock",
        }
        if result.lock is not None:  # its queue was full
            body.update(lock=result.lock, goodsId=result.goods_id, retryAfter=result.retry_after)
        return body
    if isinstance(result, DependencyUnavailable):
        DEDUCTIONS.labels(Outcome.UNAVAILABLE.value).inc()
        return {
            "flag": flag,
            "outcome": Outcome.UNAVAILABLE,
            "error": result.answer(),
            "dependency": result.dependency,
        }
    DEDUCTIONS.labels(result.outcome.value).inc()
    body = {"flag": flag, "outcome": result.outcome.value}
    if result.shortfalls:  # a refusal's, or what a partial fill did not fill
        body["shortfalls"] = shortfalls_json(result)
    if result.outcome in (Outcome.DEDUCTED, Outcome.BACKORDERED):
        body["flows"] = [flow_json(row) for row in result.flows]
        body["allocations"] = allocations_json(result.allocations)
    if result.backordered:
        body["backordered"] = owed_json(result.backordered)
    return body


def owed_json(owed: dict[str, int]) -> list[dict[str, Any]]:
    return [{"goodsId": g, "num": n} for g, n in sorted(owed.items())]
