"""The one rule for registering a named policy part (placement, ordering, gate): names are
case-insensitive and non-empty, a taken name needs ``replace=True``, a built-in stays."""

from __future__ import annotations

from collections.abc import Collection, Mapping


def new_part_name(
    kind: str, name: str, table: Mapping[str, object], builtin: Collection[str], replace: bool
) -> str:
    """The key ``name`` takes in ``table`` (``ValueError`` when it may not be registered)."""
    key = name.lower()
    if not key or ":" in key or "," in key:
        raise ValueError(f"{kind} name {name!r} must be non-empty and contain no ':' or ','")
    if key in builtin:
        raise ValueError(f"{kind} name {name!r} is a built-in {kind}")
    if key in table and not replace:
        raise ValueError(f"{kind} {name!r} is already registered (pass replace=True)")
    return key
