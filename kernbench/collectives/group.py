"""Who takes part in a collective, and how a buffer is cut between them.

A :class:`Group` is a grid of programs (``rows × cols``, row-major): the
2D algorithm reduces along its rows, then along its columns. The ring
algorithm and the tree visit the grid in *snake order* — row 0 left to
right, row 1 right to left, … — so consecutive ranks are grid neighbours
wherever the grid allows. A ``1 × p`` grid is just the programs in the
order given.

A :class:`Ring` is one ring of that group working on an element range
``[lo, hi)`` of a 1-D buffer: the range is cut into one segment per member
(``[lo + w·i // q, lo + w·(i+1) // q)``, so sizes differ by at most one
element and any payload divides), and a segment into messages of at most
``chunk`` elements.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Group:
    programs: tuple[int, ...]  # row-major over the grid
    rows: int = 1

    def __post_init__(self) -> None:
        p = len(self.programs)
        if p == 0:
            raise ValueError("a collective needs at least one program")
        if len(set(self.programs)) != p:
            raise ValueError(f"a program appears twice in the group {self.programs}")
        if self.rows < 1 or p % self.rows:
            raise ValueError(f"a grid of {self.rows} rows does not hold {p} programs")

    @classmethod
    def square(cls, programs: Iterable[int]) -> Group:
        """The most square grid (rows ≤ cols) of ``programs``, row-major."""
        programs = tuple(programs)
        p = len(programs)
        rows = max(r for r in range(1, int(p**0.5) + 1) if p % r == 0)
        return cls(programs, rows)

    @property
    def size(self) -> int:
        return len(self.programs)

    @property
    def cols(self) -> int:
        return self.size // self.rows

    def grid_row(self, r: int) -> tuple[int, ...]:
        return self.programs[r * self.cols : (r + 1) * self.cols]

    def grid_col(self, c: int) -> tuple[int, ...]:
        return self.programs[c :: self.cols]

    def where(self, program: int) -> tuple[int, int]:
        """(row, column) of a program in the grid."""
        try:
            i = self.programs.index(program)
        except ValueError:
            raise ValueError(f"program {program} is not in the group {self.programs}") from None
        return divmod(i, self.cols)

    @property
    def snake(self) -> tuple[int, ...]:
        """Ring order: rows alternately left to right and right to left."""
        out: list[int] = []
        for r in range(self.rows):
            row = self.grid_row(r)
            out += row if r % 2 == 0 else row[::-1]
        return tuple(out)


@dataclass(frozen=True, slots=True)
class Ring:
    members: tuple[int, ...]  # program ids in ring order
    pos: int  # this program's place in it
    lo: int  # the element range of the buffer the ring works on
    hi: int
    chunk: int  # elements per message

    @classmethod
    def of(cls, members: tuple[int, ...], me: int, lo: int, hi: int, chunk: int) -> Ring:
        return cls(tuple(members), members.index(me), lo, hi, chunk)

    @property
    def size(self) -> int:
        return len(self.members)

    @property
    def right(self) -> int:
        return self.members[(self.pos + 1) % self.size]

    @property
    def left(self) -> int:
        return self.members[(self.pos - 1) % self.size]

    def segment(self, i: int) -> tuple[int, int]:
        """Elements ``[a, b)`` of segment ``i`` (taken modulo the ring size)."""
        i %= self.size
        w = self.hi - self.lo
        return self.lo + w * i // self.size, self.lo + w * (i + 1) // self.size

    def pieces(self, i: int) -> list[tuple[int, int]]:
        """Segment ``i`` as messages of at most ``chunk`` elements (none if it is empty)."""
        return pieces(*self.segment(i), self.chunk)


def pieces(a: int, b: int, chunk: int) -> list[tuple[int, int]]:
    """``[a, b)`` cut into runs of at most ``chunk`` elements."""
    return [(x, min(b, x + chunk)) for x in range(a, b, chunk)]
