"""The contract of the locations' and transfers' routes (docs/locations.md). (No `from
__future__ import annotations`: pydantic reads these annotations at class creation.)"""

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from shared.web.schemas import WHOLE, Answer, ErrorBody, Identifier, Strict, text


class NotFound(ErrorBody):
    """Something the request names does not exist: goods ids, or locations."""

    goodsIds: list[str] | None = Field(None, description="the goods ids that have no stock row")
    locations: list[str] | None = Field(None, description="the locations there are none of")


class LocationPath(BaseModel):
    locationId: Identifier


class StockLocationPath(BaseModel):
    goodsId: Identifier
    locationId: Identifier


class TransferPath(BaseModel):
    transferId: Identifier


class LocationBody(Strict):
    priority: Annotated[
        int, Field(ge=0, le=1_000_000, description="lower first; ties by location id"), WHOLE
    ]
    active: bool = Field(True, description="false: never allocated from (transfers still go)")


class LocationView(Answer):
    locationId: str
    priority: int
    active: bool


class Locations(Answer):
    locations: list[LocationView] = Field(description="best first; `default` always there")


def level_model(max_level: int) -> type[Strict]:
    class LocationLevelBody(Strict):
        num: Annotated[int, Field(ge=0, le=max_level, description="the new level there"), WHOLE]

    return LocationLevelBody


class LocationLevelSet(Answer):
    goodsId: str
    location: str
    num: int = Field(description="the level at this location")
    total: int = Field(description="the goods id's level, all locations")
    seq: int = Field(description="the ledger entry (an adjustment of reason `set`)")


def transfer_model(max_level: int) -> type[Strict]:
    class TransferBody(Strict):
        goodsId: Identifier
        # `from` is a Python keyword: the field is from_ with the JSON name `from`.
        from_: Identifier = Field(alias="from", description="the location the units leave")
        to: Identifier = Field(description="the location they go to")
        units: Annotated[int, Field(ge=1, le=max_level), WHOLE]
        reference: Annotated[
            str,
            text(200, "the caller's document: unique, so a repeated POST finds its transfer"),
        ]

    return TransferBody


class TransferView(Answer):
    transferId: str
    goodsId: str
    from_: str = Field(alias="from")
    to: str
    units: int
    reference: str
    state: Literal["in_transit", "received", "cancelled"]
