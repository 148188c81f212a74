"""Identifiers, references and keys that differ only in case, an accent or a trailing space are
different values on every database, as the code compares them: in-process, real ZooKeeper,
Redis and each SQL database. On MariaDB's default collation (utf8mb4_general_ci, PAD SPACE)
the transfer `po-1` after `PO-1` missed the lookup of its id (a hash of the exact reference)
and hit the unique key on the reference: its hold re-planned until the lock was lost, a 503,
and a deduction served in the same hold failed with it."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis as redis_lib

from shared.config.settings import Settings
from tests.conftest import ADMIN, unique
from tests.helpers import Services, running_services


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings) as s:
        yield s


def json_of(answer: Any) -> Any:
    assert answer.json is not None, answer.data
    return answer.json


def deduct(s: Services, goods: str, units: int) -> Any:
    flag = unique("f")
    with redis_lib.Redis.from_url(s.settings.redis_url) as client:
        client.set(flag, "1")  # the order service's operation flag
    return s.stock.put(f"/reduceStock/{flag}", json=[{"goodsId": goods, "goodsNum": units}])


def transfer(s: Services, goods: str, source: str, target: str, reference: str) -> Any:
    body = {"goodsId": goods, "from": source, "to": target, "units": 1, "reference": reference}
    return s.stock.post("/transfers", json=body, headers=ADMIN)


def shelf(s: Services, goods: str, units: int) -> tuple[str, str]:
    near, far = unique("near"), unique("far")
    for priority, place in enumerate((near, far), start=1):
        made = s.stock.put(f"/locations/{place}", json={"priority": priority}, headers=ADMIN)
        assert made.status_code == 201, made.json
    put = s.stock.put(f"/stock/{goods}/locations/{near}", json={"num": units}, headers=ADMIN)
    assert put.status_code == 200, put.json
    return near, far


@pytest.mark.parametrize(
    "first, second",
    [("PO-{}", "po-{}"), ("Café {}", "Cafe {}"), ("PO-{}", "PO-{} ")],
    ids=["case", "accent", "trailing-space"],
)
def test_references_that_a_collation_would_fold_are_distinct_transfers(
    services: Services, first: str, second: str
) -> None:
    s, goods, stem = services, unique(), unique("r")[2:]
    near, far = shelf(s, goods, 10)
    one = transfer(s, goods, near, far, first.format(stem))
    assert one.status_code == 201, one.json
    # the second transfer, with deductions of the same goods id beside it (served in one
    # hold with it when they meet at the lock)
    with ThreadPoolExecutor(4) as pool:
        other = pool.submit(transfer, s, goods, near, far, second.format(stem))
        beside = [pool.submit(deduct, s, goods, 1) for _ in range(3)]
        two = other.result()
        deductions = [d.result() for d in beside]
    answered = (two.status_code, [d.status_code for d in deductions])
    assert answered == (201, [200, 200, 200]), (two.json, [d.json for d in deductions])
    assert json_of(two)["transferId"] != json_of(one)["transferId"]
    assert json_of(two)["reference"] == second.format(stem)
    for sent, reference in ((one, first), (two, second)):  # each repeat finds its own
        again = transfer(s, goods, near, far, reference.format(stem))
        assert again.status_code == 200, again.json
        assert json_of(again)["transferId"] == json_of(sent)["transferId"]
    view = json_of(s.stock.get(f"/stock/{goods}"))
    assert (view["num"], view["inTransit"]) == (5, 2)


def test_goods_ids_that_differ_only_in_case_are_two_goods(services: Services) -> None:
    s, stem = services, unique("g")[2:]
    upper, lower = f"G-{stem}".upper(), f"g-{stem}".lower()
    s.seed(upper, 5)
    s.seed(lower, 7)
    assert (s.level(upper), s.level(lower)) == (5, 7)
    assert deduct(s, upper, 2).status_code == 200
    assert (s.level(upper), s.level(lower)) == (3, 7)


def place(s: Services, user: str, goods: str, key: str) -> Any:
    body = {"userId": user, "items": [{"goodsId": goods, "num": 1}]}
    return s.order.post("/genOrder", json=body, headers={"Idempotency-Key": key})


def test_keys_and_user_ids_that_differ_only_in_case_are_distinct(services: Services) -> None:
    s, goods, stem = services, unique(), unique("k")[2:]
    s.seed(goods, 10)
    first = place(s, f"U-{stem}", goods, f"K-{stem}")
    second = place(s, f"u-{stem}", goods, f"k-{stem}")
    for answer in (first, second):
        assert (answer.status_code, json_of(answer)["status"]) == (200, "CONFIRMED"), answer.json
        assert "Idempotent-Replayed" not in answer.headers
    assert json_of(first)["orderId"] != json_of(second)["orderId"]
    assert [o["id"] for o in s.orders_of(f"U-{stem}")] == [json_of(first)["orderId"]]
    assert [o["id"] for o in s.orders_of(f"u-{stem}")] == [json_of(second)["orderId"]]
    repeat = place(s, f"U-{stem}", goods, f"K-{stem}")  # a real repeat is still one
    assert json_of(repeat)["orderId"] == json_of(first)["orderId"]
    body = {"userId": "u1", "items": [{"goodsId": goods, "num": 2}], "ttlSeconds": 600}
    held = [
        s.order.post("/reservations", json=body, headers={"Idempotency-Key": key})
        for key in (f"R-{stem}", f"r-{stem}")
    ]
    assert [h.status_code for h in held] == [201, 201], [h.json for h in held]
    assert json_of(held[0])["reservationId"] != json_of(held[1])["reservationId"]
    assert s.level(goods) == 4
