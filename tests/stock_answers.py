"""Each answer of the stock service's edge held against what the database holds after it, for
the stateful test: no 5xx in a world where every server is up; a deduction's outcome, flows
and owed units as written; a refusal, a 409 or a 422 that wrote nothing."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from tests.stock_edge import Answered
from tests.stock_world import World


def expect(answer: Answered, allowed: Iterable[int], what: str) -> None:
    """Every server is up and every input valid: a 5xx is a defect, whatever it says."""
    assert answer.status < 500, f"{what}: answered {answer}"
    assert answer.status in set(allowed), f"{what}: answered {answer}"


def wanted_per_goods(lines: list[dict[str, Any]]) -> Counter[str]:
    wanted: Counter[str] = Counter()
    for line in lines:
        wanted[line["goodsId"]] += int(line["goodsNum"])
    return wanted


def check_deduction(
    answer: Answered, flag: str, lines: list[dict[str, Any]], fill: str, world: World
) -> str:
    """The deduction's answer against its rows; returns its outcome."""
    body = answer.body or {}
    outcome = str(body.get("outcome"))
    decision = world.decisions.get(flag)
    decided = decision.outcome if decision is not None else None
    wanted = wanted_per_goods(lines)
    flows: Counter[str] = Counter()
    for row in world.flows:
        if row.flag == flag:
            flows[row.goods_id] += int(row.num)
    answered: Counter[str] = Counter()
    for f in body.get("flows") or []:
        answered[f["goodsId"]] += int(f["num"])
    if answer.status == 409:
        assert outcome == "insufficient", f"{flag}: 409 {body}"
        assert decided == "refused" and not flows, f"{flag}: refused, yet {decided} {flows}"
        return outcome
    assert outcome in ("deducted", "backordered"), f"{flag}: 200 {body}"
    assert decided == "deducted", f"{flag}: answered {outcome}, decided {decided}"
    assert answered == flows, f"{flag}: answered flows {answered}, wrote {flows}"
    owed = {o["goodsId"]: int(o["num"]) for o in body.get("backordered") or []}
    lines_owed = {r.goods_id: int(r.wanted) for r in world.lines if r.flag == flag}
    assert owed == lines_owed, f"{flag}: answered owed {owed}, its lines want {lines_owed}"
    for goods_id, n in wanted.items():
        got = flows.get(goods_id, 0) + owed.get(goods_id, 0)
        if fill == "partial":
            assert got <= n, f"{flag}: {goods_id} took {got} of {n}"
        else:
            assert got == n, f"{flag}: {goods_id} took and owes {got}, wanted {n}"
    allocated: Counter[str] = Counter()
    for a in body.get("allocations") or []:
        allocated[a["goodsId"]] += int(a["num"])
    assert allocated == flows, f"{flag}: allocations {allocated}, flows {flows}"
    return outcome


def check_decided_once(answered: dict[str, str], world: World) -> None:
    """Each flag's first answer stands: deducted (or backordered) stays deducted until a
    return; refused stays refused; voided stays voided."""
    allowed = {
        "deducted": ("deducted", "returned"),
        "backordered": ("deducted", "returned"),
        "insufficient": ("refused",),
        "voided": ("voided",),
        "returned": ("returned",),
    }
    for flag, outcome in answered.items():
        decision = world.decisions.get(flag)
        decided = decision.outcome if decision is not None else None
        assert decided in allowed[outcome], f"{flag}: answered {outcome}, decided {decided}"
