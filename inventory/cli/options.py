"""Argument types and the parser class: a mistake in an argument is one line and exit 2,
before anything starts."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from typing import NoReturn

from rich.console import Console

from inventory.cli.errors import UsageError
from shared.config.settings import Settings
from shared.web.schemas import IDENTIFIER_PATTERN

err = Console(stderr=True)


class Parser(argparse.ArgumentParser):
    """argparse prints the whole usage before its error; this prints the error and where the
    help is, on one line."""

    def error(self, message: str) -> NoReturn:
        line = f"[red]{self.prog}: {message}[/] (see {self.prog} --help)"
        err.print(line, highlight=False, soft_wrap=True)
        sys.exit(2)


class Help(argparse.HelpFormatter):
    """Shows each option's default, where it has one worth showing."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (
            "%(default)" not in text
            and action.default not in (None, False, argparse.SUPPRESS)
            and action.option_strings
        ):
            text += " (default: %(default)s)"
        return text


def at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
        return value

    parse.__name__ = f"whole number >= {minimum}"
    return parse


def between(minimum: int, maximum: int, why: str) -> Callable[[str], int]:
    """A whole number in [minimum, maximum]; `why` says what the upper bound protects."""
    lower = at_least(minimum)

    def parse(text: str) -> int:
        value = lower(text)
        if value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum}, not {value} ({why})")
        return value

    parse.__name__ = f"whole number {minimum}-{maximum}"
    return parse


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def ratio(text: str) -> float:
    value = _number(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, not {value}")
    return value


def positive_float(text: str) -> float:
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be above 0, not {value}")
    return value


def goods_level(pair: str) -> tuple[str, int]:
    """GOODS=NUM (`seed`, `check --initial`), read after parsing: every pair is checked before
    any level is set, and a mistake names the pair and what a level may be."""
    goods, _, num_text = pair.partition("=")
    if not re.fullmatch(IDENTIFIER_PATTERN, goods) or not re.fullmatch(r"-?\d+", num_text):
        raise UsageError(
            f"not GOODS=NUM: {pair!r} (a goods id of letters, digits and _.:- then =, "
            "then a level, e.g. g1=100)"
        )
    num, highest = int(num_text), Settings().max_stock_level  # what PUT /stock accepts
    if not 0 <= num <= highest:
        why = "a level cannot be negative" if num < 0 else f"at most {highest:,}"
        raise UsageError(f"{pair}: the level must be between 0 and {highest} ({why})")
    return goods, num
