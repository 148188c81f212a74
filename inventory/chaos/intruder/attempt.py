"""One attempt of the intruder and how it is judged: refused only by the answer that says so."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

GUESS = "hunter2"  # every guessed password and token
FLAG_LIKE = "1795560000000deadbeefdeadbeef"  # shaped like an order id (shared/ids.py)


@dataclass
class Attempt:
    target: str  # zookeeper | redis | postgres | http
    what: str
    refused: bool
    answer: str


def attempt(
    target: str, what: str, action: Callable[[], object], refusal: Callable[[Exception], bool]
) -> Attempt:
    """Run `action`; refused if it raised what `refusal` recognises. Any other error (a node
    missing, a timeout) is reported as it was and is not counted as refused: it proved
    nothing."""
    try:
        result = action()
    except Exception as exc:  # what the server answered is the finding, whatever its type
        answer = f"{type(exc).__name__}: {exc}".strip()
        if len(answer) > 200:  # the reason is at the end of a driver's long message
            answer = f"{answer[:60]} ... {answer[-120:]}"
        return Attempt(target, what, refusal(exc), answer)
    return Attempt(target, what, False, f"done: {str(result)[:120]}")
