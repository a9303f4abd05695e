"""Number and unit arithmetic shared by knob parsing and rendering.

PostgreSQL units are case-sensitive (B kB MB GB TB, us ms s min h d) and values are rounded
to the parameter's base unit; MySQL and MariaDB accept K M G T P E suffixes on any number.
"""

from __future__ import annotations

import math
import re

from pmem_advisor.errors import UsageError

PG_MEMORY = {"B": 1, "kB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}
PG_TIME_US = {"us": 1, "ms": 1000, "s": 1000**2, "min": 60 * 1000**2, "h": 3600 * 1000**2,
              "d": 86400 * 1000**2}
# Base units a catalog may name, in bytes or microseconds.
BASE_BYTES = {"B": 1, "kB": 1024, "8kB": 8192, "MB": 1024**2}
BASE_US = {"us": 1, "ms": 1000, "s": 1000**2, "min": 60 * 1000**2}
MY_SUFFIX = {"K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5, "E": 1024**6}


def size_bytes(knob, value) -> int | None:
    """A size knob's value, in its base unit (8 kB pages, kB, bytes), as bytes; None for a
    knob that is not a size and for a negative sentinel (-1: "auto" / "same as")."""
    if knob is None or knob.type != "size" or isinstance(value, bool) \
            or not isinstance(value, int | float) or value < 0:
        return None
    return int(value * BASE_BYTES.get(knob.unit or "B", 1))

_PG_NUMBER = re.compile(r"^\s*([-+]?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?))"
                        r"\s*([A-Za-z]*)\s*$")
_MY_NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)([kKmMgGtTpPeE]?)\s*$")


def pg_number(text: str, *, integer: bool = False) -> tuple[float, str] | None:
    """Split PostgreSQL numeric text into (number, unit) or None when it is not a number.

    ``integer``: read it as the server's strtol(base 0) does for integer settings, so a
    leading 0 means octal (log_file_mode = 0600 is 384) and 0x hexadecimal.
    """
    m = _PG_NUMBER.match(text)
    if not m:
        return None
    if integer and not re.match(r"\s*[-+]?\d", text) and not text.startswith("."):
        # parse_int: strtol converts nothing, and only a '.' right at the start sends the
        # text on to strtod: ' .5' and '-.5' are refused where '.5' is read
        return None
    num = m.group(1)
    digits = num.lstrip("+-")
    if "0x" in num.lower():
        value = float(int(num, 16))
    elif integer and len(digits) > 1 and digits.startswith("0") and digits.isdigit():
        if not set(digits) <= set("01234567"):
            return None  # 08 is no octal number: the server rejects it too
        value = float(int(num, 8))
    else:
        value = float(num)
    return value, m.group(2)


def pg_to_base(value: float, unit: str, base: str | None) -> float | None:
    """Convert ``value unit`` to the base unit ``base``; None when the unit does not fit."""
    if not unit:
        return value
    if base in BASE_BYTES and unit in PG_MEMORY:
        table, base_size = PG_MEMORY, BASE_BYTES[base]
    elif base in BASE_US and unit in PG_TIME_US:
        table, base_size = PG_TIME_US, BASE_US[base]
    else:
        return None
    # guc.c convert_to_base_unit: a fraction of a unit is first rounded (rint) to a whole
    # number of the next smaller unit ('0.11min' is 7s, not 6.6s; '1.5GB' stays 1536MB)
    sizes = sorted(table.values())
    smaller = [u for u in sizes if u < table[unit]]
    if smaller:
        step = smaller[-1]
        return round(value * table[unit] / step) * step / base_size
    return value * table[unit] / base_size


def pg_units_for(base: str | None) -> list[str]:
    """The unit names PostgreSQL accepts for a parameter with base unit ``base``."""
    if base in BASE_BYTES:
        return list(PG_MEMORY)
    if base in BASE_US:
        return list(PG_TIME_US)
    return []


def pg_render_int(value: int, base: str | None) -> str:
    """The largest exact unit for ``value`` (in ``base``): 16384 x 8kB -> '128MB'."""
    if value <= 0 or base is None:
        return str(value)
    if base in BASE_BYTES:
        total, table = value * BASE_BYTES[base], PG_MEMORY
    elif base in BASE_US:
        total, table = value * BASE_US[base], PG_TIME_US
    else:
        return str(value)
    for name, size in sorted(table.items(), key=lambda kv: -kv[1]):
        if total % size == 0:
            return f"{total // size}{name}"
    return str(value)


def pg_round(value: float) -> int:
    """PostgreSQL rounds converted values with rint(): halves go to the even neighbour."""
    return int(round(value))


def my_number(text: str) -> int | float | None:
    """MySQL/MariaDB numeric option text with an optional K/M/G/T/P/E suffix."""
    m = _MY_NUMBER.match(text)
    if not m:
        return None
    scale = MY_SUFFIX.get(m.group(2).upper(), 1)
    if m.group(1).lstrip("+-").isdigit():  # exact: 18446744073709551615 is not a float
        return int(m.group(1)) * scale
    return float(m.group(1)) * scale


def my_render_size(value: int) -> str:
    """Bytes with the largest exact suffix up to G: 134217728 -> '128M'."""
    if value <= 0:
        return str(value)
    for suffix in ("G", "M", "K"):
        if value % MY_SUFFIX[suffix] == 0:
            return f"{value // MY_SUFFIX[suffix]}{suffix}"
    return str(value)


def render_real(value: float) -> str:
    """Shortest text that reads back as the same float, without a trailing '.0'."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


MAX_BYTES = 1 << 64  # a size beyond any machine is a typo, not a size
_BYTES = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_BYTE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_bytes(value: object, what: str) -> int:
    """Bytes from an int or from text a person types: '24G', '512MB', '1.5TiB', '4096'.
    Binary multiples throughout, as the servers use them; UsageError names ``what``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    m = _BYTES.match(str(value))
    if not m:
        raise UsageError(f"{what}: {value!r} is not a size (e.g. 24G, 512MB)")
    n = float(m.group(1)) * _BYTE_UNITS[m.group(2).lower()]
    if not math.isfinite(n) or n > MAX_BYTES:
        raise UsageError(f"{what}: {value!r} is beyond any machine (more than 2**64 bytes)")
    return int(n)
