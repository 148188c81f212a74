"""No buyer is told what the end state contradicts, and a lost flag loses no sale: the order
service against the real stock service, ZooKeeper, Redis and each SQL database, with the
network between them failing on purpose (httpx transports that lose what a network loses)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import httpx
import redis as redis_lib
import sqlalchemy as sa

from order_service.placing.client import StockClient
from order_service.placing.flags import FlagWriter
from order_service.placing.retry import CallPolicy
from order_service.settling.reconcile import reconcile
from shared.config.settings import Settings
from tests.conftest import unique
from tests.helpers import Services, running_services


class Failing(httpx.BaseTransport):
    """Passes requests to the stock service, except those `fail` picks: those raise
    ConnectError before anything is sent; and those `lose` picks are done, but their answer is
    lost (ReadTimeout). `before` runs first, for every request."""

    def __init__(
        self,
        inner: httpx.BaseTransport,
        fail: Callable[[httpx.Request], bool],
        before: Callable[[httpx.Request], None] = lambda _r: None,
        lose: Callable[[httpx.Request], bool] = lambda _r: False,
    ) -> None:
        self.inner = inner
        self.fail = fail
        self.before = before
        self.lose = lose
        self.seen: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(f"{request.method} {request.url.path.split('/')[1]}")
        self.before(request)
        if self.fail(request):
            raise httpx.ConnectError("cut", request=request)
        response = self.inner.handle_request(request)
        if self.lose(request):
            raise httpx.ReadTimeout("answer lost", request=request)
        return response


def first_reduce_answer_lost() -> Callable[[httpx.Request], bool]:
    """The first reduceStock is done, its answer (with its flow rows) lost: the retry is a
    `duplicate`, which carries no rows, so the order service must read the flow."""
    seen = {"reduce": 0}

    def lose(request: httpx.Request) -> bool:
        if stock_route(request) != "reduceStock":
            return False
        seen["reduce"] += 1
        return seen["reduce"] == 1

    return lose


def stock_route(request: httpx.Request) -> str:
    return request.url.path.split("/")[1]


def wrapped(settings: Settings, make: Callable[[httpx.BaseTransport], Failing]):  # type: ignore[no-untyped-def]
    made: list[Failing] = []

    def wrap(inner: httpx.BaseTransport) -> httpx.BaseTransport:
        made.append(make(inner))
        return made[0]

    return running_services(settings, wrap_transport=wrap), made


def place(s: Services, goods: str, key: str | None = None) -> httpx.Response:
    """One unit of `goods`; with `key`, the same buyer and body each time (a replay)."""
    headers = {"Idempotency-Key": key} if key else {}
    user = f"u-{key}" if key else unique("u")
    return s.order.post(  # type: ignore[return-value]
        "/genOrder", json={"userId": user, "goodsIds": [goods]}, headers=headers
    )


def test_a_deduction_whose_flow_cannot_be_read_is_confirmed_not_failed(settings: Settings) -> None:
    """Fault 2 of the settlement issue: the stock service deducted, every GET /stockFlow poll
    failed. The order was FAILED not_confirmed (409), then the reconciler made it CONFIRMED, and
    the same key replayed 409, then 200. Now the order service asks the stock database what it
    decided for the flag (GET /flags), learns it was deducted, and answers 200 from the start."""
    context, made = wrapped(
        settings,
        lambda inner: Failing(
            inner, lambda r: stock_route(r) == "stockFlow", lose=first_reduce_answer_lost()
        ),
    )
    with context as s:
        goods, key = unique(), unique("key")
        s.seed(goods, 5)
        first = place(s, goods, key)
        assert (first.status_code, first.json["status"]) == (200, "CONFIRMED"), first.json
        assert "GET stockFlow" in made[0].seen and "GET flags" in made[0].seen
        assert s.level(goods) == 4
        again = place(s, goods, key)
        assert (again.status_code, again.json["status"]) == (200, "CONFIRMED")


def test_an_outcome_nobody_can_learn_is_pending_never_failed(settings: Settings) -> None:
    """The stock service deducted; neither the flow nor the flag's decision can be read. The
    answer says PENDING (503), the order stays PENDING, and the reconciler confirms it: no
    answer was contradicted."""
    context, _ = wrapped(
        settings,
        lambda inner: Failing(
            inner,
            lambda r: stock_route(r) in ("stockFlow", "flags"),
            lose=first_reduce_answer_lost(),
        ),
    )
    with context as s:
        goods, key = unique(), unique("key")
        s.seed(goods, 5)
        first = place(s, goods, key)
        assert (first.status_code, first.json["status"]) == (503, "PENDING"), first.json
        assert first.json["dependency"] == "stock service"
        order_id = first.json["orderId"]
        assert s.order.get(f"/orders/{order_id}").json["status"] == "PENDING"
        with StockClient(
            "http://stock", CallPolicy(5, 0, 10, 0), transport=httpx.WSGITransport(app=s.stock_app)
        ) as stock:
            report = reconcile(s.order_app.extensions["orders"].store, stock, timedelta(0))
        assert order_id in report.confirmed
        again = place(s, goods, key)
        assert (again.status_code, again.json["status"]) == (200, "CONFIRMED")
        assert s.level(goods) == 4


def test_the_answer_follows_the_row_when_the_reconciler_settled_it_first(
    settings: Settings,
) -> None:
    """While the request has lost the stock service, the reconciler settles its order. The
    request's own write (PENDING, outcome unknown) moves nothing, and its answer says what the
    row says: CONFIRMED."""
    holder: dict[str, Services] = {}

    def reconciler_meanwhile(request: httpx.Request) -> None:
        if stock_route(request) == "flags":
            s = holder["s"]
            with StockClient(
                "http://stock",
                CallPolicy(5, 0, 10, 0),
                transport=httpx.WSGITransport(app=s.stock_app),
            ) as stock:
                reconcile(s.order_app.extensions["orders"].store, stock, timedelta(0))

    context, _ = wrapped(
        settings,
        lambda inner: Failing(
            inner,
            lambda r: stock_route(r) in ("stockFlow", "flags"),
            reconciler_meanwhile,
            lose=first_reduce_answer_lost(),
        ),
    )
    with context as s:
        holder["s"] = s
        goods = unique()
        s.seed(goods, 5)
        answer = place(s, goods)
        assert (answer.status_code, answer.json["status"]) == (200, "CONFIRMED"), answer.json
        assert answer.json["reason"].startswith("reconciled: deducted")
        assert s.order.get(f"/orders/{answer.json['orderId']}").json["status"] == "CONFIRMED"


def test_a_flag_redis_lost_before_the_retry_is_written_again_and_sold(settings: Settings) -> None:
    """Fault 3: the first attempt failed before its decision (nothing sent), then Redis lost
    the flag. The retry passed no pre-filter and was answered `duplicate`; the polls found no
    flow and the order FAILED with stock on the shelf. Now the stock service answers
    unknown_flag, the order service writes the flag again, and the sale is made."""
    flags = redis_lib.Redis.from_url(settings.redis_url)
    calls = {"reduce": 0}

    def lose_flag_then_fail(request: httpx.Request) -> None:
        if stock_route(request) == "reduceStock":
            calls["reduce"] += 1
            if calls["reduce"] == 1:
                flags.delete(request.url.path.split("/")[2])  # Redis restarted empty

    context, made = wrapped(
        settings,
        lambda inner: Failing(
            inner,
            lambda r: stock_route(r) == "reduceStock" and calls["reduce"] == 1,
            lose_flag_then_fail,
        ),
    )
    with context as s:
        goods = unique()
        s.seed(goods, 5)
        answer = place(s, goods)
        assert (answer.status_code, answer.json["status"]) == (200, "CONFIRMED"), answer.json
        assert made[0].seen.count("PUT reduceStock") == 3  # cut, unknown_flag, deducted
        assert s.level(goods) == 4
        assert len(s.flows(flag=answer.json["orderId"])) == 1
    flags.close()


def test_an_unreachable_stock_service_loses_no_sale_and_voids_only_past_the_bound(
    settings: Settings,
) -> None:
    """Every reduceStock attempt is cut (the stock service unreachable for the whole call
    budget): the flag is undecided, so the order stays PENDING (503) instead of being voided
    with the stock on the shelf (losing a sale to a fault the deployment survives). Once the
    network is back, the reconciler deducts again under the same flag: the sale is made. An
    order undecided past RECONCILE_VOID_AFTER is voided instead, and a late attempt of its flag
    is refused."""
    cut = {"on": True}
    context, _ = wrapped(
        settings,
        lambda inner: Failing(inner, lambda r: cut["on"] and stock_route(r) == "reduceStock"),
    )
    with context as s:
        goods = unique()
        s.seed(goods, 5)
        kept, dropped = place(s, goods), place(s, goods)
        for answer in (kept, dropped):
            assert (answer.status_code, answer.json["status"]) == (503, "PENDING"), answer.json
            assert answer.json["reason"].startswith("outcome_unknown: ConnectError")
        cut["on"] = False  # healed
        store = s.order_app.extensions["orders"].store
        flags = FlagWriter(redis_lib.Redis.from_url(settings.redis_url), 60, 2.0)
        transport = httpx.WSGITransport(app=s.stock_app)
        with StockClient("http://stock", CallPolicy(5, 0, 10, 0), transport=transport) as stock:
            old = {dropped.json["orderId"]: timedelta(hours=1)}  # past the bound: voided
            backdate(s, old)
            report = reconcile(
                store, stock, timedelta(0), flags=flags, void_after=timedelta(minutes=5)
            )
        # The pass settles every PENDING order of the database: the tests share one per
        # backend and never clean up, so another test's leftover may be in the report too.
        mine = {kept.json["orderId"], dropped.json["orderId"]}
        assert [o for o in report.confirmed if o in mine] == [kept.json["orderId"]], report
        assert [o for o in report.failed if o in mine] == [dropped.json["orderId"]], report
        assert s.order.get(f"/orders/{kept.json['orderId']}").json["status"] == "CONFIRMED"
        assert s.level(goods) == 4
        order_id = dropped.json["orderId"]
        redis_lib.Redis.from_url(settings.redis_url).set(order_id, "orderId", ex=60)
        late = s.stock.put(f"/reduceStock/{order_id}", json=[{"goodsId": goods, "goodsNum": 1}])
        assert (late.status_code, late.json["outcome"]) == (409, "voided")
        assert s.level(goods) == 4


def backdate(s: Services, ages: dict[str, timedelta]) -> None:
    from order_service.storage.tables import orders
    from shared.database.engines import utcnow

    engine = sa.create_engine(s.settings.order_database_url)
    with engine.begin() as conn:
        for order_id, age in ages.items():
            conn.execute(
                sa.update(orders).where(orders.c.id == order_id).values(created_at=utcnow() - age)
            )
    engine.dispose()
