"""Issue 11 #1 reaches the tuner: the catalogs' risky values leave its search space.

MariaDB's doublewrite `fast`/OFF and O_DIRECT_NO_FSYNC (10.11) are durability risks in the
curated catalogs, so the tuner's space (which reads the catalogs' safety) never searches them
without --allow-unsafe.
"""

from __future__ import annotations

import pytest

from pmem_advisor.errors import UsageError
from pmem_advisor.knobs.catalog import load_catalog
from pmem_advisor.tuner.space import KnobSpec, build_space


def space_for(version, names, allow_unsafe=False):
    catalog = load_catalog("mysql", "mariadb", version)
    specs = {k.name: KnobSpec.from_knob(k) for k in catalog}
    return build_space(specs, engine="mysql", flavour="mariadb", version=version,
                       important=names, allow_unsafe=allow_unsafe, max_knobs=20)


@pytest.mark.parametrize("version", ["10.11", "11.4"])
def test_risky_values_are_not_searched(version):
    space = space_for(version, ["innodb_flush_method", "innodb_doublewrite"])
    knobs = {k.name: k for k in space.knobs}
    assert "innodb_doublewrite" not in knobs  # ON is its only safe value: nothing to search
    if "innodb_flush_method" in knobs:
        assert "O_DIRECT_NO_FSYNC" not in knobs["innodb_flush_method"].choices
        assert "nosync" not in knobs["innodb_flush_method"].choices


def test_allow_unsafe_searches_them():
    space = space_for("10.11", ["innodb_flush_method"], allow_unsafe=True)
    knobs = {k.name: k for k in space.knobs}
    assert "O_DIRECT_NO_FSYNC" in knobs["innodb_flush_method"].choices


@pytest.mark.parametrize("flavour,version,searched", [("mariadb", "10.11", False),
                                                      ("mysql", "8.4", True)])
def test_a_switch_the_rules_pin_is_not_searched_nor_moved_first(flavour, version, searched):
    """MariaDB's hash index, pinned OFF by a bound of one value (PM034), leaves the space and
    the importance order; MySQL's stays searched."""
    from pmem_advisor.rules.combine import recommend
    from pmem_advisor.rules.facts import build_facts
    from tests.rules.machines import make_profile

    rec = recommend(build_facts(make_profile("ssd"), engine="mysql", flavour=flavour,
                                version=version, data_dir="/srv/my", memory_bytes=1 << 30))
    catalog = load_catalog("mysql", flavour, version)
    specs = {k.name: KnobSpec.from_knob(k) for k in catalog}
    def space(**kw):
        return build_space(specs, engine="mysql", flavour=flavour, version=version,
                           important=list(rec.important), bounds=dict(rec.bounds),
                           max_knobs=20, fill_to=20, **kw)

    names = [k.name for k in space().knobs]
    assert ("innodb_adaptive_hash_index" in names) is searched, names
    assert "innodb_adaptive_hash_index" not in rec.important
    if not searched:
        assert rec.bounds["innodb_adaptive_hash_index"] == [False]
        # asked for by name, it is refused in one line, not dropped in silence
        with pytest.raises(UsageError, match="held at False by the rules.*not searched"):
            space(extra_knobs=["innodb_adaptive_hash_index"])
