"""The topology digest: one stable name for the machine a run was simulated on.

``topology_digest(spec)`` is the SHA-256 (64 hex digits) of the resolved
topology — the validated document after ``--set``, every schema default
filled in (:func:`kernbench.topology.spec.load_spec`) — written as canonical
JSON (keys sorted, no spaces, numbers as JSON writes them), leaving out the
two keys that only label it, ``name`` and ``description``. So two runs with
the same digest ran on the same hardware parameters, whatever the file was
called: ``cube1 --set sip.ucie.bw_gbps=1024`` and the YAML that ``kernbench
topo show cube1 --yaml --set sip.ucie.bw_gbps=1024`` saves from it share
one, and any changed value (a file edit, a ``--set``, a grid value) gives
another. A run record carries it as ``topology_digest``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from kernbench.outputs import to_json

#: keys of the document that name or describe the machine without changing it
LABELS = ("name", "description")


def topology_digest(spec: Mapping[str, Any]) -> str:
    """SHA-256 of the resolved topology ``spec`` without its labels, as 64 hex digits."""
    body = {k: _plain(v) for k, v in spec.items() if k not in LABELS}
    return hashlib.sha256(to_json(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _plain(obj: Any) -> Any:
    """A compiled graph's frozen document (mapping proxies, tuples) as the plain JSON values it was loaded as."""
    if isinstance(obj, Mapping):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj
