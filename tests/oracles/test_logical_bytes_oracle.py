"""``logical_bytes`` of every PE command, counted field by field from the
ADR-0064 D2 table (written out again here, not imported):

    framing 4 · opcode 1 · enum (scope) 1 · handle 8 · scalar 4 · tuple length 1

and the D2 rule for ``OpSpec.extra`` values: bool 1, int/float 4, tuple or
list ``1 + 4·len``, str 1, anything else 4. No deduplication: a handle named
twice is counted twice.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kernbench.pe.commands import (
    CompositeCmd,
    CopyCmd,
    DmaReadCmd,
    DmaWriteCmd,
    GatherCmd,
    GemmCmd,
    IpcqRecvCmd,
    IpcqSendCmd,
    MathCmd,
    MathPairCmd,
    OpSpec,
    ScatterCmd,
)

FRAMING, OPCODE, ENUM, HANDLE, SCALAR, TUPLE_LEN = 4, 1, 1, 8, 4, 1


def extra_value_bytes(v) -> int:
    if v is True or v is False:
        return 1
    if type(v) in (int, float):
        return SCALAR
    if type(v) in (tuple, list):
        return TUPLE_LEN + SCALAR * len(v)
    if type(v) is str:
        return 1
    return SCALAR


H = object()  # a stand-in handle: only its presence counts


def test_moves_carry_two_handles_and_a_size():
    for cls in (DmaReadCmd, DmaWriteCmd, CopyCmd):
        assert cls(H, H, 4096).logical_bytes == FRAMING + 2 * HANDLE + SCALAR, cls.__name__


def test_ipcq_commands_carry_a_peer_a_handle_and_a_size():
    # send: dst_pe (scalar), src (handle), size_bytes (scalar); the payload is numerics only
    assert IpcqSendCmd(3, H, 4096, payload=[1, 2, 3]).logical_bytes == FRAMING + SCALAR + HANDLE + SCALAR
    # recv: src_pe (scalar), dst (handle), size_bytes (scalar)
    assert IpcqRecvCmd(3, H, 4096).logical_bytes == FRAMING + SCALAR + HANDLE + SCALAR


def test_a_math_pair_is_a_math_command_with_a_second_out_handle():
    # tl.topk: opcode, inputs (tuple length + a handle), values out, extras (tuple length + k), indices out
    assert (
        MathPairCmd("topk", (H,), H, {"k": 2}, H).logical_bytes
        == FRAMING + OPCODE + TUPLE_LEN + HANDLE + HANDLE + TUPLE_LEN + SCALAR + HANDLE
    )


@given(st.lists(st.integers(0, 1000), min_size=1, max_size=40))
def test_row_moves_carry_source_index_destination_and_size(host):
    rows = tuple([H] * len(host))  # the rows' addresses: worked out by the DMA engine, not carried
    for cls in (GatherCmd, ScatterCmd):
        # an index handle
        assert cls(H, (), rows, 4096, H, H).logical_bytes == FRAMING + HANDLE + HANDLE + HANDLE + SCALAR
        # host-side indices: a tuple of scalars in place of the handle
        assert cls(None, tuple(host), rows, 4096, H, H).logical_bytes == FRAMING + HANDLE + TUPLE_LEN + SCALAR * len(host) + HANDLE + SCALAR


def test_a_gemm_carries_opcode_three_handles_and_three_dims():
    assert GemmCmd(H, H, H, 64, 96, 80).logical_bytes == FRAMING + OPCODE + 3 * HANDLE + 3 * SCALAR


extras = st.dictionaries(
    st.text("abcdefgh", min_size=1, max_size=4),
    st.one_of(
        st.booleans(),
        st.integers(-(2**31), 2**31 - 1),
        st.floats(allow_nan=False, allow_infinity=False),
        st.lists(st.integers(0, 9), max_size=5).map(tuple),
        st.lists(st.integers(0, 9), max_size=5),
        st.text(max_size=3),
        st.none(),
    ),
    max_size=5,
)


@settings(max_examples=200, deadline=None)
@given(n_inputs=st.integers(1, 4), extra=extras)
def test_a_math_command_counts_each_input_and_each_extra_by_type(n_inputs, extra):
    cmd = MathCmd("add", tuple([H] * n_inputs), H, dict(extra))
    want = FRAMING + OPCODE + TUPLE_LEN + HANDLE * n_inputs + HANDLE + TUPLE_LEN + sum(map(extra_value_bytes, extra.values()))
    assert cmd.logical_bytes == want


def op_bytes(n_operands: int, has_out: bool, extra: dict) -> int:
    return (
        OPCODE
        + ENUM
        + TUPLE_LEN
        + HANDLE * n_operands
        + (HANDLE if has_out else 0)
        + TUPLE_LEN
        + sum(map(extra_value_bytes, extra.values()))
    )


ops = st.tuples(st.integers(0, 3), st.booleans(), extras)


@settings(max_examples=200, deadline=None)
@given(specs=st.lists(ops, min_size=1, max_size=6), rw=st.integers(0, 4))
def test_a_composite_sums_its_ops_and_its_rw_handles_without_deduplication(specs, rw):
    built = tuple(OpSpec("add", {f"x{i}": H for i in range(n)}, H if has_out else None, extra=dict(extra)) for n, has_out, extra in specs)
    cmd = CompositeCmd(built, tuple([H] * rw))
    want = FRAMING + TUPLE_LEN + sum(op_bytes(*s) for s in specs) + TUPLE_LEN + HANDLE * rw
    assert cmd.logical_bytes == want


def test_the_adr_anchor_composite_is_54_bytes():
    # ADR-0064 D3: one GEMM OpSpec (2 operands, out, m/k/n) and one rw handle = 54 bytes
    gemm = OpSpec("gemm", {"a": H, "b": H}, H, extra={"m": 64, "k": 64, "n": 64})
    assert CompositeCmd((gemm,), (H,)).logical_bytes == 54
