"""What a command says when the user asked for something it cannot do: one line, exit 2."""

from __future__ import annotations


class UsageError(Exception):
    """A user mistake (an argument, a setting, a missing stack): the message says what to do."""
