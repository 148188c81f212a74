"""How the intruder's attempts are judged (check IN): refused only by an answer that says so.
A hand-made attempt that got through must make the run's verdict a violation, and a server
answering anything but a refusal (even a 404 for an unknown goods id) must count as got in."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from inventory.chaos import intruder
from inventory.chaos.intruder.attempt import attempt
from inventory.chaos.intruder.on_http import Refused, _request
from inventory.chaos.verdict import VALID, VIOLATED


def test_an_attempt_is_refused_only_by_the_refusal_it_expects() -> None:
    def refuse() -> None:
        raise PermissionError("NoAuth")

    def time_out() -> None:
        raise TimeoutError("no answer")

    expects = lambda exc: isinstance(exc, PermissionError)  # noqa: E731
    assert attempt("zookeeper", "delete a lock node", refuse, expects).refused
    # A timeout proves nothing: not counted as refused, and reported as it was.
    timed = attempt("zookeeper", "delete a lock node", time_out, expects)
    assert not timed.refused and "TimeoutError" in timed.answer
    done = attempt("redis", "FLUSHALL", lambda: "OK", expects)
    assert not done.refused and done.answer == "done: OK"


def test_one_attempt_that_got_in_makes_the_run_a_violation() -> None:
    refused = {
        "who": "stranger",
        "target": "redis",
        "what": "FLUSHALL",
        "refused": True,
        "answer": "NOAUTH",
    }
    got_in = {**refused, "what": "CONFIG SET", "refused": False, "answer": "done: OK"}
    assert intruder.verdict([refused, refused]).verdict == VALID
    bad = intruder.verdict([refused, got_in])
    assert bad.verdict == VIOLATED
    assert any("CONFIG SET" in line for line in bad.counterexamples)
    assert intruder.describe([refused, got_in]).startswith("1 of 2 attempts refused")


class _Answer(http.server.BaseHTTPRequestHandler):
    """Answers with the status the path names (/as/<status>/...); 404 for /faults/... (as the
    stock service with fault injection off); 200 otherwise."""

    def do_PUT(self) -> None:
        status = 200
        if self.path.startswith("/as/"):
            status = int(self.path.split("/")[2])
        elif self.path.startswith("/faults/"):
            status = 404
        self.send_response(status)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[int]:
    httpd = http.server.HTTPServer(("127.0.0.1", 0), _Answer)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1]
    httpd.shutdown()


@pytest.mark.parametrize("status", [401, 403])
def test_http_refusals(server: int, status: int) -> None:
    with pytest.raises(Refused):
        _request("127.0.0.1", server, "PUT", f"/as/{status}/reduceStock", [], "")


def test_a_404_is_a_refusal_only_for_the_fault_route(server: int) -> None:
    """PUT /faults does not exist while fault injection is off: its 404 is the refusal. A 404
    anywhere else (an unknown goods id) means the guard let the request through."""
    with pytest.raises(Refused):
        _request("127.0.0.1", server, "PUT", "/faults/x", None, "")
    _request("127.0.0.1", server, "PUT", "/as/404/stock/g", None, "")  # raises nothing
    assert _request("127.0.0.1", server, "PUT", "/reduceStock/f", [], "").startswith("200")
