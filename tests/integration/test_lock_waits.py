"""How long the stock service waits for a lock on a request's behalf, against real ZooKeeper,
Redis and each SQL database, with one goods id's lock held elsewhere: never past the caller's
own timeout (X-Caller-Timeout-Ms); a batched call within its budget, its stalled flag answered
not_attempted and its other flags served; and past LOCK_QUEUE_MAX waiters a newcomer refused at
once (503 naming the goods id and the lock, Retry-After), nothing written, the queue's length
and the refusal in the metrics."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import redis as redis_lib

from shared.config.settings import Settings
from shared.contract import CALLER_TIMEOUT_HEADER
from shared.metrics import scrape
from tests.conftest import ADMIN, unique
from tests.helpers import Services, held_by_another_thread, running_services
from tests.integration.test_combining import (
    ClaimAfter,
    Holder,
    flags_in_redis,
    queued,
    set_flags,
)
from tests.waiting import wait_for


def line(goods: str) -> list[dict[str, Any]]:
    return [{"goodsId": goods, "goodsNum": 1}]


def timed_put(s: Services, path: str, body: Any, headers: dict[str, str]) -> tuple[float, Any]:
    started = time.monotonic()
    client = s.stock_app.test_client()
    answer = (
        client.put(path, json=body, headers=headers) if body else client.put(path, headers=headers)
    )
    return time.monotonic() - started, answer


def test_no_wait_for_a_lock_outlives_its_caller_and_a_batch_answers_within_its_budget(
    settings: Settings,
) -> None:
    """LOCK_TIMEOUT 20 s: a lone deduction whose caller waits 1.5 s is answered 503 (the lock
    not had, nothing written) within it; a batched call whose caller waits 5 s is answered
    within its budget (1 s): the held goods id's flag not_attempted, its flag live, the free
    one deducted."""
    with running_services(settings.with_(lock_timeout=20.0)) as s:
        deps = s.stock_app.extensions["stock"]
        held, free = unique("held"), unique("free")
        s.seed(held, 5)
        s.seed(free, 5)
        lone, stalled, served = unique("flag"), unique("flag"), unique("flag")
        set_flags(s, lone, stalled, served)
        with held_by_another_thread(deps.locks, [held]):
            waited, answer = timed_put(
                s, f"/reduceStock/{lone}", line(held), {CALLER_TIMEOUT_HEADER: "1500"}
            )
            assert (answer.status_code, answer.json["dependency"]) == (503, "lock"), answer.json
            assert 1.0 < waited < 3.0, waited
            body = {"flags": [{"flag": stalled, "lines": line(held)}]}
            body["flags"].append({"flag": served, "lines": line(free)})
            waited, answer = timed_put(s, "/reduceStock", body, {CALLER_TIMEOUT_HEADER: "5000"})
        assert answer.status_code == 200 and waited < 3.0, (waited, answer.json)
        first, second = answer.json["results"]
        assert (first["flag"], first["outcome"]) == (stalled, "not_attempted"), first
        assert "not attempted" in first["error"] and "retryAfter" not in first
        assert (second["flag"], second["outcome"]) == (served, "deducted"), second
        assert flags_in_redis(s, [lone, stalled, served]) == [lone, stalled]
        assert (s.level(held), s.level(free)) == (5, 4)
        assert s.flows(flag=lone) == [] and s.flows(flag=stalled) == []
        # Sent again once the lock is free, each is deducted once.
        again: Any = s.stock.put(f"/reduceStock/{stalled}", json=line(held))
        assert again.json["outcome"] == "deducted"
        assert s.level(held) == 4


def test_past_lock_queue_max_a_newcomer_is_refused_at_once_naming_the_goods_and_the_lock(
    settings: Settings,
) -> None:
    with running_services(settings.with_(lock_queue_max=2, lock_timeout=20.0)) as s:
        deps = s.stock_app.extensions["stock"]
        queues = deps.deduction.runner.queues
        hot, free = unique("hot"), unique("free")
        s.seed(hot, 10)
        s.seed(free, 10)
        late, batched, beside = (unique("flag") for _ in range(3))
        first, second = unique("flag"), unique("flag")
        set_flags(s, first, second, late, batched, beside)
        with ThreadPoolExecutor(2) as pool:
            with held_by_another_thread(deps.locks, [hot]):
                queued = [
                    pool.submit(s.stock_app.test_client().put, f"/reduceStock/{f}", json=line(hot))
                    for f in (first, second)
                ]
                wait_for(lambda: queues.waiters(hot) == 2, "two requests waiting for the lock")
                waited, refused = timed_put(s, f"/reduceStock/{late}", line(hot), {})
                assert waited < 1.0, waited
                assert refused.status_code == 503, refused.json
                assert refused.headers["Retry-After"] == "1"
                assert (refused.json["goodsId"], refused.json["lock"]) == (hot, hot)
                assert refused.json["dependency"] == "lock" and refused.json["retryAfter"] == 1
                assert "queue full" in refused.json["error"]
                metrics = scrape().decode()
                assert f'lock_queue_waiters{{goods_id="{hot}"}} 2.0' in metrics
                assert f'lock_queue_refusals_total{{goods_id="{hot}"}} 1.0' in metrics
                # In a batched call the refusal is that flag's, not_attempted; its neighbour is
                # served.
                body = {
                    "flags": [
                        {"flag": batched, "lines": line(hot)},
                        {"flag": beside, "lines": line(free)},
                    ]
                }
                batched_answer: Any = s.stock.put("/reduceStock", json=body)
                results = batched_answer.json["results"]
                assert results[0]["outcome"] == "not_attempted", results
                assert (results[0]["goodsId"], results[0]["retryAfter"]) == (hot, 1)
                assert results[1]["outcome"] == "deducted", results
            answers: list[Any] = [f.result(30) for f in queued]
        assert [a.json["outcome"] for a in answers] == ["deducted", "deducted"]
        assert queues.waiters(hot) == 0
        assert flags_in_redis(s, [late, batched]) == [late, batched]
        assert s.flows(flag=late) == [] and s.flows(flag=batched) == []
        assert (s.level(hot), s.level(free)) == (8, 9)
        flags = redis_lib.Redis.from_url(s.settings.redis_url)
        assert flags.exists(first) == 0  # decided: forgotten


def test_a_return_and_an_adjustment_sharing_a_hold_each_end_in_their_own_time(
    settings: Settings,
) -> None:
    """A return of a stalled goods id (its caller waits 3 s) and a restock of a free one,
    combined in one batch: the restock is made and answered at once; the return is answered
    503 within its caller's time (LOCK_TIMEOUT is 20 s), nothing returned, and is made once
    the lock is free."""
    with running_services(settings.with_(lock_timeout=20.0)) as s:
        deps = s.stock_app.extensions["stock"]
        stalled, free, pilot_goods = unique("stalled"), unique("free"), unique("pilot")
        for goods in (stalled, free, pilot_goods):
            s.seed(goods, 5)
        bought, pilot = unique("flag"), unique("flag")
        set_flags(s, bought, pilot)
        assert s.stock.put(f"/reduceStock/{bought}", json=line(stalled)).status_code == 200
        stuck = Holder(deps.locks, [stalled])
        # The pilot's batch leads the lane, its claim not made yet, while the two queue.
        go_on = threading.Event()
        deps.deduction.runner.locks = ClaimAfter(deps.locks, go_on)
        client = s.stock_app.test_client
        try:
            with ThreadPoolExecutor(3) as pool:
                first = pool.submit(client().put, f"/reduceStock/{pilot}", json=line(pilot_goods))
                queued(deps, 0)
                wait = {CALLER_TIMEOUT_HEADER: "3000"}
                back = pool.submit(timed_put, s, f"/returnStock/{bought}", None, wait)
                queued(deps, 1)
                restock = {"reason": "restock", "delta": 3}
                path = f"/stock/{free}/adjustments"
                made = pool.submit(client().post, path, json=restock, headers=ADMIN)
                queued(deps, 2)
                go_on.set()  # the return and the restock now form one batch
                freed = time.monotonic()
                assert first.result(30).status_code == 200
                adjusted: Any = made.result(30)
                adjusted_after = time.monotonic() - freed
                waited, returned = back.result(30)
            assert adjusted.status_code == 201 and adjusted.json["num"] == 8, adjusted.json
            assert adjusted_after < 1.0, adjusted_after
            assert (returned.status_code, returned.json["dependency"]) == (503, "lock")
            assert waited < 5.0, waited
            assert s.level(stalled) == 4  # nothing returned
        finally:
            stuck.release()
        again: Any = s.stock.put(f"/returnStock/{bought}")
        assert (again.status_code, again.json["outcome"]) == (200, "returned"), again.json
        assert s.level(stalled) == 5
