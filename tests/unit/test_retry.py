import random

from order_service.placing.retry import RetryBudget


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def budget(attempts: int, total: float, clock: FakeClock) -> RetryBudget:
    return RetryBudget(
        attempts,
        total,
        base_delay=0.2,
        max_delay=1.0,
        sleep=clock.sleep,
        clock=clock,
        rng=random.Random(7),
    )


def test_attempts_are_bounded_and_the_first_has_no_delay() -> None:
    clock = FakeClock()
    b = budget(3, 100, clock)
    taken = 0
    while b.next_attempt():
        taken += 1
    assert taken == 3
    assert len(clock.sleeps) == 2


def test_backoff_is_jittered_under_an_exponential_cap() -> None:
    clock = FakeClock()
    b = budget(6, 100, clock)
    while b.next_attempt():
        pass
    caps = [0.2, 0.4, 0.8, 1.0, 1.0]
    assert all(0 <= s <= cap for s, cap in zip(clock.sleeps, caps, strict=True))
    assert len(set(clock.sleeps)) > 1


def test_the_time_budget_stops_attempts_early() -> None:
    clock = FakeClock()
    b = budget(10, 1.0, clock)
    assert b.next_attempt()
    clock.now = 1.5  # the first attempt took longer than the whole budget
    assert not b.next_attempt()
    assert b.used == 1


def test_a_retry_after_is_waited_at_least_once_and_past_the_budget_ends_it() -> None:
    """A 503 of a full lock queue says when to come back: an attempt sooner is refused the
    same way and spends one of the budget's few attempts."""
    clock = FakeClock()
    b = budget(4, 10.0, clock)
    assert b.next_attempt()
    b.retry_after(1.0)
    assert b.next_attempt()
    assert clock.sleeps == [1.0]  # the jitter's cap is 0.2: the server's 1 s stands
    assert b.next_attempt()  # asked nothing this time: the backoff alone
    assert 0 <= clock.sleeps[1] <= 0.4
    b.retry_after(60.0)  # longer than what is left: no attempt the server would take
    assert not b.next_attempt()
    assert len(clock.sleeps) == 2 and b.used == 3
