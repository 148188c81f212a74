import pytest

from shared.http_errors import ApiError
from shared.ids import new_id
from shared.locks import lock_names
from shared.validation import identifier, merge_lines, quantity


def test_ids_are_unique_time_ordered_and_fit_the_flag_alphabet() -> None:
    ids = [new_id() for _ in range(2000)]
    assert len(set(ids)) == 2000
    assert ids[0][:13] <= ids[-1][:13]
    assert all(len(i) == 29 and identifier(i, "flag") == i for i in ids)


@pytest.mark.parametrize("value", ["", "a/b", "a b", "x" * 65, 5, None, "é"])
def test_identifiers_refuse_what_cannot_be_a_key_or_a_path(value: object) -> None:
    with pytest.raises(ApiError) as caught:
        identifier(value, "goodsId")
    assert caught.value.code == 400 and "goodsId" in caught.value.message


@pytest.mark.parametrize("value", [0, -1, 11, True, 1.0, "1", None])
def test_quantities_must_be_whole_and_within_limits(value: object) -> None:
    with pytest.raises(ApiError):
        quantity(value, "num", maximum=10)


def test_repeated_lines_are_summed_and_the_sum_is_limited() -> None:
    assert merge_lines([("a", 2), ("b", 1), ("a", 3)], maximum=10) == {"a": 5, "b": 1}
    with pytest.raises(ApiError):
        merge_lines([("a", 6), ("a", 6)], maximum=10)


def test_sku_scope_locks_each_goods_once_in_sorted_order() -> None:
    assert lock_names(["g2", "g1", "g2"], "sku") == ["g1", "g2"]
    assert lock_names(["g2", "g1"], "global") == ["global"]
