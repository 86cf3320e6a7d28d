"""Node ids, built and read in one place.

A node id is dotted: ``sip0.cube5.pe3.dma`` (an element inside a CUBE),
``sip0.cube5.hbm.slice3``, ``sip0.cube5.r2``, ``sip1.io`` (a SIP's IO
chiplet, outside its CUBEs) or ``host``. :class:`NodeId` is the parsed
form; the helpers answer the questions the rest of the code asks of an id
(which SIP, which CUBE, which PE, the HBM slice beside a PE, how PEs sort).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_ID = re.compile(r"^sip(\d+)\.(?:cube(\d+)\.)?(.+)$")
_PE = re.compile(r"^pe(\d+)(?:\.|$)")
_SLICE = re.compile(r"^hbm\.slice(\d+)$")


@dataclass(frozen=True, slots=True)
class NodeId:
    """A parsed node id: ``sip``/``cube`` (None where the id has none) and the ``local`` rest."""

    sip: int | None  # None for the host
    cube: int | None  # None outside a CUBE (the host, ``sipS.io``)
    local: str  # inside the CUBE (``pe3.dma``, ``hbm.slice3``, ``r2``), or ``io`` / ``host``

    @staticmethod
    def parse(text: str) -> NodeId:
        return _parse(text)

    @property
    def pe(self) -> int | None:
        """The PE index of a PE or one of its engines (``pe3``, ``pe3.dma``); None otherwise."""
        m = _PE.match(self.local) if self.cube is not None else None
        return int(m.group(1)) if m else None

    @property
    def slice(self) -> int | None:
        """The slice index of an HBM slice (``hbm.slice3``); None otherwise."""
        m = _SLICE.match(self.local) if self.cube is not None else None
        return int(m.group(1)) if m else None

    def __str__(self) -> str:
        if self.sip is None:
            return self.local
        if self.cube is None:
            return f"sip{self.sip}.{self.local}"
        return f"{cube_id(self.sip, self.cube)}.{self.local}"


@lru_cache(maxsize=65536)
def _parse(text: str) -> NodeId:
    m = _ID.match(text)
    if m is None:
        return NodeId(None, None, text)
    cube = m.group(2)
    return NodeId(int(m.group(1)), int(cube) if cube is not None else None, m.group(3))


def io_id(sip: int) -> str:
    return f"sip{sip}.io"


def cube_id(sip: int, cube: int) -> str:
    return f"sip{sip}.cube{cube}"


def pe_id(sip: int, cube: int, pe: int) -> str:
    return f"{cube_id(sip, cube)}.pe{pe}"


def pe_of(component: str) -> str | None:
    """The PE an engine lane belongs to: ``sip0.cube1.pe3.gemm`` → ``sip0.cube1.pe3``; None for anything else."""
    n = _parse(component)
    p = n.pe
    if p is None or "." not in n.local:
        return None
    assert n.sip is not None and n.cube is not None
    return pe_id(n.sip, n.cube, p)


def local_slice(pe: str) -> str:
    """The HBM slice beside a PE: ``sip0.cube2.pe5`` → ``sip0.cube2.hbm.slice5``."""
    n = _parse(pe)
    p = n.pe
    if p is None or n.local != f"pe{p}":
        raise ValueError(f"{pe!r} is not a PE id (sipS.cubeC.peP)")
    assert n.sip is not None and n.cube is not None
    return f"{cube_id(n.sip, n.cube)}.hbm.slice{p}"


def pe_key(pe: str) -> tuple[int, int, int]:
    """Sort PEs by SIP, CUBE, then index (``pe10`` after ``pe9``)."""
    n = _parse(pe)
    if n.sip is None or n.cube is None or n.pe is None:
        raise ValueError(f"{pe!r} is not a PE id (sipS.cubeC.peP)")
    return n.sip, n.cube, n.pe
