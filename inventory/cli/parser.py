"""The `inventory` program: the commands of inventory/cli/commands/ under one parser. Each
command adds its own arguments; this only gives them one program name, one way to show help
(options.Help) and one way to refuse a mistake (options.Parser)."""

from __future__ import annotations

from inventory.cli.commands import COMMANDS
from inventory.cli.options import Help, Parser

DESCRIPTION = (
    "Order and stock services that deduct inventory under a lock without overselling, "
    "and the tools that prove it."
)


def build_parser() -> Parser:
    parser = Parser(prog="inventory", description=DESCRIPTION, formatter_class=Help)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for command in COMMANDS:
        made: Parser = sub.add_parser(
            command.NAME, help=command.SUMMARY, description=command.SUMMARY, formatter_class=Help
        )
        command.add_arguments(made)
        made.set_defaults(func=command.run)
    return parser
