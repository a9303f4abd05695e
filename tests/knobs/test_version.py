import pytest

from pmem_advisor.errors import UsageError
from pmem_advisor.knobs.version import parse_version, series, version_in


def test_parse_versions():
    assert parse_version("18.6") == (18, 6)
    assert parse_version("10.11.19-MariaDB-0+deb12u1") == (10, 11, 19)
    assert parse_version("8.0.36") == (8, 0, 36)
    assert parse_version("8.0.36") < parse_version("8.4.0")
    assert series("10.11.19-MariaDB") == "10.11"


def test_series_pads_to_latest_patch():
    assert version_in("8.0", "8.0.30", None)
    assert not version_in("8.0.28", "8.0.30", None)
    assert version_in("10.11.19", "10.11.12", "11.0")
    assert not version_in("11.4", None, "11.0")


def test_bad_version():
    with pytest.raises(UsageError, match="not a version"):
        parse_version("abc")
