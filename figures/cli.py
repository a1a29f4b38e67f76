"""Subcommands of this area (registered by ``stam.cli``).  Imports nothing heavy at module level."""


def register(subparsers) -> None:
    """Add this area's subcommands to ``stam``'s subparsers."""
