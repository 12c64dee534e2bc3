"""Kubernetes resource quantities (``"2"``, ``"500m"``, ``"3Gi"``, ``1.5``) as integer
milli-units, the unit every amount of the tenancy model is kept in."""

from __future__ import annotations

import math
import re
from fractions import Fraction

from ..parsing import describe

_SUFFIX = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
_QUANTITY = re.compile(
    r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:[eE]([+-]?[0-9]{1,3}))?([a-zA-Z]*)"
)

#: largest amount accepted (milli-units): beyond any real cluster, small enough to stay exact
MAX_MILLI = 10**30


class QuantityError(ValueError):
    """Not a quantity; the message says why (callers add file and field)."""


def milli(value: object) -> int:
    """``value`` (a YAML/TOML number or a Kubernetes quantity string) in milli-units, rounded
    up as Kubernetes rounds ``MilliValue``."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise QuantityError(
            f"expected a quantity (a number or text like '4', '500m', '3Gi'), got {describe(value)}"
        )
    if isinstance(value, int):
        amount = Fraction(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"expected a finite quantity, got {value}")
        amount = Fraction(value)
    else:
        m = _QUANTITY.fullmatch(value.strip())
        if m is None or m.group(3) not in _SUFFIX or (m.group(2) and m.group(3)):
            raise QuantityError(
                f"not a quantity: {describe(value)} (write e.g. '4', '500m', '3Gi')"
            )
        amount = Fraction(m.group(1)) * _SUFFIX[m.group(3)]
        if m.group(2):
            amount *= Fraction(10) ** int(m.group(2))
    out = math.ceil(amount * 1000)
    if abs(out) > MAX_MILLI:
        raise QuantityError(f"quantity too large: {describe(value)}")
    return out
