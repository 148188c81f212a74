"""Inputs at the stock service's limits, for the stateful test: identifiers of 64 characters
(the longest the edge takes), quantities at the edges of what is there and of MAX_QUANTITY /
MAX_STOCK_LEVEL, references a database collation folds together (case, accents, trailing
spaces) and free text in any script the edge accepts (no control characters)."""

from __future__ import annotations

import unicodedata

from hypothesis import strategies as st

ID_LENGTH = 64  # shared/web/schemas.py IDENTIFIER_PATTERN: 1-64 of [A-Za-z0-9_.:-]
ID_FILL = "_.:-Zz9"


def identifier(run: str, kind: str, n: int, length: int = ID_LENGTH) -> str:
    """A run's own identifier, padded to `length` with every punctuation the edge accepts."""
    stem = f"{run}-{kind}{n}"
    pad = (ID_FILL * ID_LENGTH)[: max(length - len(stem), 0)]
    return (stem + pad)[:length] if length >= len(stem) else stem


# Free text the edge takes (shared/web/schemas.py TEXT_PATTERN): no C0/C1 control characters;
# surrogates cannot be sent in JSON at all.
free_text = st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=0, max_size=12)


def fold(text: str) -> str:
    """What a case- and accent-insensitive, space-padding collation compares: MariaDB's
    default (utf8mb4_general_ci) folds these together."""
    plain = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in plain if not unicodedata.combining(c))
    return plain.casefold().rstrip(" ")


def folded_variant(reference: str, how: str) -> str:
    """`reference` changed the way a collation ignores."""
    if how == "upper":
        return reference.upper()
    if how == "lower":
        return reference.lower()
    if how == "swap":
        return reference.swapcase()
    if how == "accent":  # an o with an acute accent, precomposed
        return reference.replace("o", "\u00f3").replace("O", "\u00d3")
    if how == "space":
        return reference + " "
    return reference


FOLDS = ("upper", "lower", "swap", "accent", "space")


def amount(data: st.DataObject, there: int, top: int, label: str) -> int:
    """A quantity from 1 to `top`, drawn at the edges of what is `there`: all of it, one more,
    a little, the most allowed."""
    edges = st.sampled_from([1, 2, 3, there, there + 1, there - 1, top])
    pick = data.draw(st.one_of(edges, edges, edges, st.integers(1, top)), label=label)
    return min(max(pick, 1), top)


def level(data: st.DataObject, top: int, label: str) -> int:
    """A level from 0 to `top` (MAX_STOCK_LEVEL), at its edges mostly."""
    edges = st.sampled_from([0, 1, 2, 3, 5, top - 1, top])
    return data.draw(st.one_of(edges, edges, edges, st.integers(0, top)), label=label)


def seed(data: st.DataObject, top: int, label: str) -> int:
    """A goods id's first level: none, a few, or the most allowed."""
    return data.draw(st.sampled_from([0, 0, 1, 3, 5, 10, top]), label=label)
