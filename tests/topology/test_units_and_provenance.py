"""Every topology key has a unit; a value's provenance is what the comment on its line says."""

from __future__ import annotations

import pytest

from kernbench.topology.params import parameters
from kernbench.topology.provenance import comment_of, marks, segments, source_of
from kernbench.topology.schema import Field, ListOf, MapOf, Section
from kernbench.topology.spec import TOPOLOGY_SCHEMA, load_resolved, named_topologies
from kernbench.topology.units import unit_of


def _schema_keys(node, name=""):
    if isinstance(node, Field):
        yield name
    elif isinstance(node, dict):
        yield from _schema_keys(Section(node), name)
    elif isinstance(node, Section):
        for key, child in node.fields.items():
            yield from _schema_keys(child, key)
    elif isinstance(node, ListOf):
        yield from _schema_keys(node.item, name)
    elif isinstance(node, MapOf):
        yield from _schema_keys(node.value, name)


def test_every_key_of_the_schema_has_a_unit():
    missing = sorted({key for key in _schema_keys(TOPOLOGY_SCHEMA) if unit_of(key) is None})
    assert not missing, f"give these keys a unit suffix or an entry in units.NAMED_UNITS: {missing}"


@pytest.mark.parametrize(
    "key, symbol",
    [
        ("bw_gbps", "GB/s"),
        ("channel_bw_gbps", "GB/s"),
        ("phy_overhead_ns", "ns"),
        ("slice_capacity_bytes", "B"),
        ("max_composite_logical_bytes", "B"),
        ("fixed_per_cmd_cycles", "cycles"),
        ("clock_freq_ghz", "GHz"),
        ("gemm_tflops", "TFLOP/s"),
        ("byte_cycles_recip", "cycles/B"),
        ("math_elems_per_cycle", "elements/cycle"),
        ("channels_per_slice", "count"),
        ("sips", "count"),
        ("attach_cube", "index"),
        ("ucie_attach", "router"),
    ],
)
def test_a_unit_comes_from_the_key_suffix_or_the_named_table(key, symbol):
    unit = unit_of(key)
    assert unit is not None and unit.symbol == symbol


@pytest.mark.parametrize(
    "line, comment",
    [
        ("bw_gbps: 768   # [hw] PCIe", "[hw] PCIe"),
        ('description: "a # b"  # [cal] x', "[cal] x"),
        ("name: a#b", ""),
        ("attach: hub's # note", "note"),
        ("# whole line", "whole line"),
    ],
)
def test_the_comment_of_a_line_starts_at_a_hash_after_a_space_outside_quotes(line, comment):
    assert comment_of(line) == comment


def test_a_marker_governs_the_text_up_to_the_next_marker():
    assert [(s.mark, s.text) for s in segments("PCIe [hw] bandwidth; [cal] same latency")] == [
        ("hw", "[hw] bandwidth"),
        ("cal", "[cal] same latency"),
    ]
    assert segments("no marker here") == []


def _sources(comment, keys):
    return {key: source_of(segs) for key, segs in marks(comment, keys).items()}


def test_a_marker_reaches_the_keys_its_text_names_by_unit_word_or_key_name():
    assert _sources("[hw] bandwidth; [cal] same PCIe latency", ["bw_gbps", "prop_ns"]) == {"bw_gbps": "hw", "prop_ns": "cal"}
    assert _sources("[hw] 256 GB/s; [cal] prop_ns fitted", ["a", "b", "bw_gbps", "prop_ns"]) == {
        "a": "unmarked",
        "b": "unmarked",
        "bw_gbps": "hw",
        "prop_ns": "cal",
    }


def test_a_marker_naming_no_key_of_its_line_marks_all_of_them():
    assert _sources("[hw]", ["width", "height"]) == {"width": "hw", "height": "hw"}


def test_an_ordinary_word_is_not_taken_for_a_key_name():
    # "a" and "half" are words of the sentence, not the keys a and half
    assert _sources("[hw] 2 ns/router; within a half", ["overhead_ns", "half"]) == {"overhead_ns": "hw", "half": "unmarked"}


def test_a_key_both_markers_reach_is_hw_plus_cal_and_no_marker_is_unmarked():
    assert _sources("[hw] 2 ns in the table; [cal] the ns fitted", ["overhead_ns"]) == {"overhead_ns": "hw+cal"}
    assert _sources("[hw] first; [cal] second", ["prop_ns"]) == {"prop_ns": "hw+cal"}
    assert _sources("a plain remark", ["prop_ns"]) == {"prop_ns": "unmarked"}


def test_every_shipped_topology_marks_what_the_papers_table_gives():
    """The table's numbers are [hw] in every topology that keeps them; no parameter is left without a unit."""
    hw = ("flit_bytes", "sip.ucie.bw_gbps", "sip.ucie.prop_ns", "cube.hbm.channel_bw_gbps", "pe.attrs.gemm_tflops")
    for name in named_topologies():
        rows = {p.key: p for p in parameters(load_resolved(name))}
        assert all(p.unit for p in rows.values()), name
        assert all(rows[key].source == "hw" for key in hw), name
        assert rows["sip.ucie.phy_overhead_ns"].source == "cal", name
        assert rows["cube.links[0].bw_gbps"].source == "hw" and rows["cube.links[0].prop_ns"].source == "cal", name
        assert rows["cube.links[0].a"].source == "unmarked", name
