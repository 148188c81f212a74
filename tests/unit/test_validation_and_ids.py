import re

import pytest
from pydantic import ValidationError

from coordination.locks import lock_names
from order_service.api.schemas import IdempotencyHeaders, order_body_model
from shared.ids import new_id
from shared.web.http_errors import ApiError
from shared.web.schemas import IDENTIFIER_PATTERN, merge_lines, validation_message
from stock_service.api.schemas import input_models

OrderBody = order_body_model(max_lines=3, max_quantity=10)
STOCK = input_models(max_lines=3, max_quantity=10, max_stock_level=100)


def test_ids_are_unique_time_ordered_and_fit_the_flag_alphabet() -> None:
    ids = [new_id() for _ in range(2000)]
    assert len(set(ids)) == 2000
    assert ids[0][:13] <= ids[-1][:13]
    assert all(len(i) == 29 and re.fullmatch(IDENTIFIER_PATTERN, i) for i in ids)


@pytest.mark.parametrize("value", ["", "a/b", "a b", "x" * 65, 5, None, "é", "a\n"])
def test_identifiers_refuse_what_cannot_be_a_key_or_a_path(value: object) -> None:
    with pytest.raises(ValidationError) as caught:
        OrderBody.model_validate({"userId": value, "goodsIds": ["g1"]})
    assert caught.value.errors()[0]["loc"] == ("userId",)


@pytest.mark.parametrize("value", [0, -1, 11, True, 1.5, "1", None, float("nan")])
def test_quantities_must_be_whole_and_within_limits(value: object) -> None:
    with pytest.raises(ValidationError):
        OrderBody.model_validate({"userId": "u", "items": [{"goodsId": "g", "num": value}]})
    with pytest.raises(ValidationError):
        STOCK.lines.model_validate([{"goodsId": "g", "goodsNum": value}])


def test_a_whole_number_written_2_0_is_an_integer_as_json_schema_says() -> None:
    body = OrderBody.model_validate({"userId": "u", "items": [{"goodsId": "g", "num": 2.0}]})
    assert body.pairs() == [("g", 2)]  # type: ignore[attr-defined]
    assert STOCK.level.model_validate({"num": 7.0}).num == 7  # type: ignore[attr-defined]


def test_the_limits_come_from_the_settings() -> None:
    with pytest.raises(ValidationError):
        OrderBody.model_validate({"userId": "u", "goodsIds": ["a", "b", "c", "d"]})
    assert OrderBody.model_validate({"userId": "u", "goodsIds": ["a", "b", "c"]})
    with pytest.raises(ValidationError):
        STOCK.level.model_validate({"num": 101})
    assert STOCK.level.model_validate({"num": 0})


@pytest.mark.parametrize(
    "body",
    [{"userId": "u"}, {"userId": "u", "goodsIds": ["a"], "items": [{"goodsId": "a", "num": 1}]}],
)
def test_exactly_one_body_form(body: dict[str, object]) -> None:
    with pytest.raises(ValidationError, match="exactly one of goodsIds or items"):
        OrderBody.model_validate(body)


def test_repeated_lines_are_summed_and_the_sum_is_limited_with_a_422() -> None:
    """The one rule the schema cannot state: each line is valid, their sum is not."""
    assert merge_lines([("a", 2), ("b", 1), ("a", 3)], maximum=10) == {"a": 5, "b": 1}
    body = OrderBody.model_validate({"userId": "u", "goodsIds": ["a", "b", "a"]})
    assert merge_lines(body.pairs(), 10) == {"a": 2, "b": 1}  # type: ignore[attr-defined]
    lines = STOCK.lines.model_validate([{"goodsId": "a", "goodsNum": 6}] * 2)
    with pytest.raises(ApiError) as caught:
        merge_lines(lines.pairs(), maximum=10)  # type: ignore[attr-defined]
    assert caught.value.code == 422 and "quantity of a exceeds 10" in caught.value.message


def test_an_idempotency_key_is_1_to_128_printable_characters() -> None:
    assert IdempotencyHeaders.model_validate({}).idempotency_key is None
    assert IdempotencyHeaders.model_validate({"idempotency_key": "k-1"}).idempotency_key == "k-1"
    for bad in ["", "k" * 129, "tab\there"]:
        with pytest.raises(ValidationError):
            IdempotencyHeaders.model_validate({"idempotency_key": bad})


def test_a_validation_error_reads_as_one_sentence_naming_the_field() -> None:
    pattern = f"String should match pattern '{IDENTIFIER_PATTERN}'"
    assert validation_message({"json": {"goodsIds.0": [pattern]}}) == (
        "goodsIds.0: must be 1-64 letters, digits or _ . : -",
        "goodsIds.0",
    )
    assert validation_message({"json": {"_schema": ["Value error, give one"]}}) == (
        "give one",
        None,
    )
    assert validation_message({"headers": {"idempotency_key": ["too long"]}}) == (
        "Idempotency-Key: too long",
        "Idempotency-Key",
    )


def test_sku_scope_locks_each_goods_once_in_sorted_order() -> None:
    assert lock_names(["g2", "g1", "g2"], "sku") == ["g1", "g2"]
    assert lock_names(["g2", "g1"], "global") == ["global"]
