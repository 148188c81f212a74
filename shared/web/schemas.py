"""The request and answer models both services share (pydantic), and how a validation error
reads.

The models are the input rules: apiflask validates each body, path and header against them
before a view runs (so a refused request writes nothing), and the OpenAPI document is made
from the same models, so the contract and the checks cannot drift apart. Models are strict:
"2", 2.5 and true are not quantities (2.0 is: JSON Schema's integer), 7 is not an id.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from shared.web.http_errors import ApiError

# Goods ids, flags, order ids and user ids end up in ZooKeeper paths, Redis keys and SQL
# columns of 64 characters; this alphabet is safe in all three.
IDENTIFIER_PATTERN = r"^[A-Za-z0-9_.:-]{1,64}$"
IDENTIFIER_RULE = "1-64 letters, digits or _ . : -"
Identifier = Annotated[
    str, Field(pattern=IDENTIFIER_PATTERN, description=IDENTIFIER_RULE, examples=["sku-1"])
]


def _whole_float_as_int(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


# Free text (an adjustment's reference): no control character, NUL included. PostgreSQL's
# driver refuses a NUL where SQLite stores it, so without this rule the same request was
# written on one database and a 500 on another; and a refused write inside a lock hold used to
# fail the hold's other requests with it. Checked at the edge, before a request joins a batch.
TEXT_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]*$"
TEXT_RULE = "text without control characters (NUL, tab, newline, ...)"


def text(max_length: int, description: str) -> Any:
    """A free-text field of at most `max_length` characters (its column's size)."""
    return Field(max_length=max_length, pattern=TEXT_PATTERN, description=description)


# Put last in an `Annotated[int, Field(...), WHOLE]`: JSON Schema's integer, in which 2.0 is an
# integer (what the document promises) and 2.5, "2" and true are not (strict validation runs
# after this step). Last, so that the Field's limits stay minimum/maximum in the document.
WHOLE = BeforeValidator(_whole_float_as_int)


class Strict(BaseModel):
    """Input: no type coercion; unknown fields are ignored."""

    model_config = ConfigDict(strict=True)


class Answer(BaseModel):
    """Output: documents an answer; the views build it as a dict."""

    model_config = ConfigDict(extra="allow")


class ErrorBody(Answer):
    error: str = Field(description="what went wrong, for a person")
    field: str | None = Field(None, description="the input field at fault, if one is")


class Unavailable(ErrorBody):
    dependency: str = Field(
        description="what is down: database, redis, lock, zookeeper, etcd, stock service..."
    )


class BoundBy(BaseModel):
    """The backorder limit that refused a line with fill=backorder: its goods id's, or (with
    `location`) the limit of the location it named, and the units owed under it then."""

    limit: int
    owed: int
    location: str | None = Field(
        None, description="the location whose limit bound; none: the goods id's"
    )


class Shortfall(BaseModel):
    """A line refused for lack of stock (both services answer it)."""

    goodsId: str
    requested: int
    available: int
    seedVersion: int
    backorderLimit: BoundBy | None = Field(
        None, description="fill=backorder refused: the limit owing the rest would have passed"
    )


class Health(Answer):
    status: str = Field(description="ok, or degraded when a check failed")
    checks: dict[str, bool]


# Answers every body route lists.
BODY_TOO_LARGE = (ErrorBody, "The body is larger than MAX_BODY_BYTES")
ADMIN_OFF = (ErrorBody, "Admin routes are off: no ADMIN_TOKEN is set")


def merge_lines(pairs: list[tuple[str, int]], maximum: int) -> dict[str, int]:
    """Sum repeated goods ids (a flag has at most one flow per goods id), checking the total.

    The one rule a JSON Schema cannot state (each line is valid, their sum is not), so it is
    checked here, after the schema, and answered 422: well-formed input this API will not act
    on, as for unknown goods ids."""
    merged: dict[str, int] = {}
    for goods_id, num in pairs:
        merged[goods_id] = merged.get(goods_id, 0) + num
        if merged[goods_id] > maximum:
            raise ApiError(
                422,
                f"quantity of {goods_id} exceeds {maximum} (its lines summed)",
                goodsIds=[goods_id],
            )
    return merged


# pydantic's wording for a few rules, said the way this API's clients read them.
_PLAIN = {
    f"String should match pattern '{IDENTIFIER_PATTERN}'": f"must be {IDENTIFIER_RULE}",
    f"String should match pattern '{TEXT_PATTERN}'": f"must be {TEXT_RULE}",
    "Input should be a valid string, unable to parse raw data as a unicode string": (
        "must be text (a lone surrogate is none)"
    ),
}


def validation_message(detail: dict[str, Any]) -> tuple[str, str | None]:
    """The first problem of apiflask's `{location: {field.path: [messages]}}` as one sentence,
    and the field it names (None for a rule about the whole body)."""
    for location, fields in detail.items():
        for path, messages in fields.items():
            message = messages[0] if messages else "is not valid"
            message = _PLAIN.get(message, message).removeprefix("Value error, ")
            if path == "_schema" or not path:
                return (message if location == "json" else f"{location}: {message}"), None
            if location == "headers":  # apiflask names headers in snake_case
                path = path.replace("_", "-").title()
            return f"{path}: {message}", path
    return "request is not valid", None
