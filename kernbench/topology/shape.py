"""The shape of one SIP's CUBE grid: a mesh, or a torus in X, Y or both.

CUBE ``c`` sits at ``(x, y) = (c % width, c // width)``. Neighbours are
joined by UCIe links; a *wrapped* dimension also joins its last CUBE to its
first (``phy.e`` of ``x = width − 1`` to ``phy.w`` of ``x = 0``, ``phy.s``
of the last row to ``phy.n`` of the first), with the same UCIe parameters
(a folded torus keeps every link the same length).

Routing is dimension order, X then Y. In a mesh dimension a packet moves
straight toward its target. In a wrapped dimension it takes the shorter
way round; when both ways are equally long (a ring of even size, target
half-way round) the **tie-break** is by the parity of the coordinate the
packet is at when it enters that dimension: *even goes the positive way
(east / south), odd the negative way (west / north)*. Exchanges between
partners half-way round (recursive doubling, a torus all-to-all) then load
both directions of the ring equally instead of sending everything one way.

A wrap needs at least three CUBEs in its dimension: with one it would join
a CUBE to itself, with two it would duplicate the single link between them
(both ways round are the same one hop), so "the shorter way" is undefined;
:func:`wrap_problems` reports such shapes when the topology loads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

STEP = {"e": (1, 0), "w": (-1, 0), "s": (0, 1), "n": (0, -1)}
AXIS_SIDES = ({1: "e", -1: "w"}, {1: "s", -1: "n"})


@dataclass(frozen=True, slots=True)
class GridShape:
    width: int
    height: int
    wrap_x: bool = False
    wrap_y: bool = False

    @classmethod
    def of(cls, spec: Mapping[str, Any]) -> GridShape:
        """The shape a validated topology spec declares (``sip.mesh``)."""
        mesh = spec["sip"]["mesh"]
        wrap = mesh.get("wrap") or {}
        return cls(mesh["width"], mesh["height"], bool(wrap.get("x")), bool(wrap.get("y")))

    @property
    def is_torus(self) -> bool:
        return self.wrap_x or self.wrap_y

    @property
    def cubes(self) -> int:
        return self.width * self.height

    def xy(self, c: int) -> tuple[int, int]:
        return c % self.width, c // self.width

    def neighbours(self, c: int) -> list[tuple[str, int]]:
        """``(side, CUBE)`` for every side of ``c`` that has a UCIe link, sides sorted."""
        x, y = self.xy(c)
        out = []
        for side, (dx, dy) in sorted(STEP.items()):
            nx, ny = x + dx, y + dy
            if self.wrap_x:
                nx %= self.width
            if self.wrap_y:
                ny %= self.height
            if 0 <= nx < self.width and 0 <= ny < self.height and (nx, ny) != (x, y):
                out.append((side, ny * self.width + nx))
        return out

    def _axis_moves(self, at: int, to: int, size: int, wrap: bool) -> tuple[int, int]:
        """(direction +1/−1, number of hops) along one dimension."""
        if at == to:
            return 1, 0
        if not wrap:
            return (1 if to > at else -1), abs(to - at)
        fwd = (to - at) % size
        back = size - fwd
        if fwd != back:
            return (1, fwd) if fwd < back else (-1, back)
        return (1 if at % 2 == 0 else -1), fwd  # the tie-break

    def steps(self, c0: int, c1: int) -> list[tuple[int, str]]:
        """CUBEs visited after ``c0`` on the way to ``c1``, each with the side it leaves by."""
        (x, y), (tx, ty) = self.xy(c0), self.xy(c1)
        out = []
        d, n = self._axis_moves(x, tx, self.width, self.wrap_x)
        for _ in range(n):
            x = (x + d) % self.width
            out.append((y * self.width + x, AXIS_SIDES[0][d]))
        d, n = self._axis_moves(y, ty, self.height, self.wrap_y)
        for _ in range(n):
            y = (y + d) % self.height
            out.append((y * self.width + x, AXIS_SIDES[1][d]))
        return out

    def hops(self, c0: int, c1: int) -> int:
        """UCIe links crossed from CUBE ``c0`` to ``c1``."""
        (x, y), (tx, ty) = self.xy(c0), self.xy(c1)
        return self._axis_moves(x, tx, self.width, self.wrap_x)[1] + self._axis_moves(y, ty, self.height, self.wrap_y)[1]

    @property
    def diameter(self) -> int:
        """The most UCIe links any route between two CUBEs crosses."""

        def one(size: int, wrap: bool) -> int:
            return size // 2 if wrap else size - 1

        return one(self.width, self.wrap_x) + one(self.height, self.wrap_y)

    def describe(self) -> str:
        """``"4 × 4 mesh"`` or ``"2 × 3 torus (wrap in y)"``."""
        dims = f"{self.width} × {self.height}"
        if not self.is_torus:
            return f"{dims} mesh"
        wrapped = " and ".join(a for a, w in (("x", self.wrap_x), ("y", self.wrap_y)) if w)
        return f"{dims} torus (wrap in {wrapped})"


def wrap_problems(spec: Mapping[str, Any]) -> list[str]:
    """Wrapped dimensions too short for a ring, with their key paths."""
    mesh = spec["sip"]["mesh"]
    wrap = mesh.get("wrap") or {}
    problems = []
    for axis, key in (("x", "width"), ("y", "height")):
        size = mesh[key]
        if wrap.get(axis) and size < 3:
            what = "join a CUBE to itself" if size == 1 else "duplicate the one link between the two CUBEs"
            problems.append(
                f"sip.mesh.wrap.{axis}: a wrap-around needs at least 3 CUBEs in {axis} "
                f"(sip.mesh.{key} is {size}): it would {what}, and 'the shorter way round' "
                f"is undefined; set sip.mesh.wrap.{axis}: false"
            )
    return problems
