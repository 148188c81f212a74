"""The apps the frame-cost tool compares (inventory/bench/frame_apps.py): each answers a good
genOrder body 200, and only the variants that keep the order service's validation refuse a
bad one, so that what the tool subtracts is the part it names."""

from __future__ import annotations

import json

import pytest

from inventory.bench.frame_apps import KINDS, create_app

GOOD = json.dumps({"userId": "u1", "goodsIds": ["sku-1"]})
BAD = json.dumps({"userId": "u1", "goodsIds": []})


@pytest.mark.parametrize("kind", KINDS)
def test_each_app_answers_a_good_order_and_validates_only_with_the_frames_validation(
    kind: str,
) -> None:
    client = create_app(kind).test_client()
    good = client.post("/genOrder", data=GOOD, content_type="application/json")
    assert good.status_code == 200
    assert good.get_json()["status"] == "CONFIRMED"
    bad = client.post("/genOrder", data=BAD, content_type="application/json")
    validates = kind not in ("bare", "frame-no-validation")
    assert bad.status_code == (400 if validates else 200)
    has_ids = kind not in ("bare", "frame-no-request-ids")
    assert ("X-Request-Id" in good.headers) == has_ids
    metrics = client.get("/metrics")
    assert metrics.status_code == (
        200 if kind.startswith("frame") and "metrics" not in kind else 404
    )


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown kind"):
        create_app("frame-no-such-part")
