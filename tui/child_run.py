"""A simulation in a child process (:class:`ProcessSource`), and the child's side of it.

The child runs the simulation and sends its events in column batches; a run that can be re-timed
keeps its child, which then answers the debugger's what-if prompt (:class:`ChildRetimer` here,
:func:`_serve_retimings` there), so a re-timing never competes with the UI for the interpreter lock.
"""

from __future__ import annotations

import importlib
import multiprocessing
import multiprocessing.connection
import multiprocessing.process
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kernbench import limits
from kernbench.errors import KernbenchError
from kernbench.events.bus import Bus, TupleBus
from kernbench.events.store import BatchMerger, columnize
from kernbench.events.tracefile import Trace, TraceMetadata
from kernbench.events.types import Event
from kernbench.lifeline import end_with_parent, quiet_resource_tracker
from kernbench.sweep.executors import children_start_clean, drop_safe_path
from kernbench_tui.sources import EmitBatch, PublishingRetimer, Retimer, run_metadata


class ProcessSource:
    """Runs a simulation in a child process, so it never competes with the UI
    for the interpreter lock (a pure-Python simulation in a thread does).

    ``target`` is ``"module:function"``; in the child, ``function(*args)``
    returns ``(fn, metadata)`` as ``kernbench.cli.tui_simulation`` does, and
    ``fn(bus)`` runs the simulation. The child sends columnized batches
    through a pipe; a full pipe blocks it, which is the back-pressure.
    While waiting, ``emit_batch`` is called with an empty list every
    ``heartbeat_s`` so the caller may stop the run by raising from it.
    A run that can be re-timed keeps its child: the child stays to re-time it
    (``source.retimer``, a :class:`ChildRetimer`) until the retimer is closed
    or this process ends.

    The child is *spawned* (a fork of a process running Textual's threads is
    unsafe), so, as always with ``spawn``, a script that launches the app
    must guard its entry point with ``if __name__ == "__main__":`` (the
    ``kernbench-tui`` console script and ``python -m kernbench_tui.cli`` do).
    """

    def __init__(
        self,
        target: str,
        args: tuple[object, ...] = (),
        *,
        description: str = "live simulation (child process)",
        batch_events: int = 8192,
        batch_s: float = 0.05,
        heartbeat_s: float = 0.1,
    ) -> None:
        self.target = target
        self.args = tuple(args)
        self.description = description
        self.batch_events = batch_events
        self.batch_s = batch_s
        self.heartbeat_s = heartbeat_s
        self.retimer: ChildRetimer | None = None  # once the run has ended, if it can be re-timed

    on_status: Callable[..., None] | None = None

    def run(self, emit_batch: EmitBatch) -> TraceMetadata:
        self._status(f"starting the simulation process ({self.description})")
        quiet_resource_tracker()
        ctx = multiprocessing.get_context("spawn")
        receiver, sender = ctx.Pipe()  # (both ways: a re-timable run's child takes requests afterwards)
        with children_start_clean() as had:  # (not the current folder's threading.py: see kernbench.sweep.executors)
            _ensure_resource_tracker()
            proc = ctx.Process(
                target=_child_main,
                args=(self.target, self.args, sender, self.batch_events, self.batch_s, had),
                daemon=True,
                name="kernbench-simulation",
            )
            proc.start()
        sender.close()
        serving = False
        try:
            while True:
                if not receiver.poll(self.heartbeat_s):
                    emit_batch([])
                    continue
                try:
                    tag, payload = receiver.recv()
                except EOFError:
                    proc.join(timeout=5)
                    raise KernbenchError(f"the simulation process ended without a result (exit code {proc.exitcode})") from None
                if tag == "batch":
                    emit_batch(payload)
                elif tag == "status":
                    self._status(*payload)
                elif tag == "serving":
                    serving = True
                elif tag == "done":
                    meta: TraceMetadata = payload
                    if serving:
                        self.retimer = ChildRetimer(proc, receiver, self.heartbeat_s)
                    return meta
                else:
                    raise KernbenchError(payload)
        finally:
            if self.retimer is None:
                _end_child(proc, receiver)

    def _status(self, text: str, metadata: TraceMetadata | None = None) -> None:
        if self.on_status is not None:
            self.on_status(text, metadata)


def _end_child(proc: multiprocessing.process.BaseProcess, conn: multiprocessing.connection.Connection) -> None:
    conn.close()
    if proc.is_alive():
        proc.terminate()
    proc.join(timeout=5)


@dataclass(frozen=True)
class RetimeTimings:
    """Where one re-timing by the child went (``benchmarks/bench_tui.py --what-if`` prints it): the child's CPU
    seconds re-timing (the replay, its events sent as they were published) and, of those, pickling the
    events; then this process's wall seconds from the request to the child's answer, CPU seconds turning
    the events into columns as they came (while the child went on), CPU seconds making the store once the
    answer came (merging those columns), the events' size, and when (on this process's CPU clock) the
    store was made."""

    retime_s: float
    encode_s: float
    receive_s: float
    decode_s: float
    store_s: float
    nbytes: int
    decoded_at_cpu_s: float  # this process's CPU clock (time.process_time) once the store was made: the view's time runs from here


class ChildRetimer:
    """A finished live run's re-timings, done by the child process that ran it (it holds the run's Runtime
    and command logs; the UI's process does not compete with it for the interpreter lock). One re-timing
    at a time; :meth:`close` ends the child (a re-timing waiting on it then fails with a KernbenchError).
    The child sends the events in batches as it re-times (:func:`_serve_retimings`); each is turned into
    columns here as it comes, on this process's core, so what is left once the child has answered is
    sorting and numbering them into one store (:class:`BatchMerger`). ``timings``: where the last re-timing's time went."""

    def __init__(self, proc: multiprocessing.process.BaseProcess, conn: multiprocessing.connection.Connection, poll_s: float) -> None:
        self._proc = proc
        self._conn = conn
        self._poll_s = poll_s
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self.timings: RetimeTimings | None = None

    def retime(self, changes: Sequence[str]) -> Trace:
        with self._lock:
            merger = BatchMerger()
            nbytes = 0
            decode_s = 0.0
            failed: Exception | None = None  # (a batch this process could not take: the rest is still read, to stay in step)
            try:
                t0 = time.perf_counter()
                self._conn.send(("retime", list(changes)))
                while True:
                    while not self._conn.poll(self._poll_s):
                        if self._closed.is_set() or not self._proc.is_alive():
                            raise EOFError
                    data = self._conn.recv_bytes()
                    c0 = time.process_time()
                    tag, payload = pickle.loads(data)
                    nbytes += len(data)
                    if tag != "events":
                        break
                    if failed is None:
                        try:
                            merger.add(columnize(payload))
                        except Exception as exc:  # (raised once the answer is in: the next request must not read this one's batches)
                            failed = exc
                    decode_s += time.process_time() - c0
                t1 = time.perf_counter()
                child_s = self._conn.recv()
            except (EOFError, OSError):
                raise KernbenchError("the simulation process has ended: the run can no longer be re-timed") from None
        if tag != "retimed":
            raise KernbenchError(payload)
        if failed is not None:
            raise failed
        c1 = time.process_time()
        store = merger.store()
        c2 = time.process_time()
        retime_s, encode_s = child_s
        self.timings = RetimeTimings(retime_s, encode_s, t1 - t0, decode_s, c2 - c1, nbytes, c2)
        return Trace(store, payload)

    def close(self) -> None:
        self._closed.set()
        _end_child(self._proc, self._conn)


def _ensure_resource_tracker() -> None:
    """Start multiprocessing's resource tracker with a real stderr.

    The tracker hands ``sys.stderr.fileno()`` to its process; inside a
    running Textual app stderr is a capture object whose fileno is -1, which
    makes every process start fail ("bad value(s) in fds_to_keep").
    """
    from multiprocessing import resource_tracker

    try:
        usable = sys.stderr.fileno() >= 0
    except (AttributeError, OSError, ValueError):
        usable = True  # the tracker skips a stderr without a fileno
    if usable:
        resource_tracker.ensure_running()
        return
    saved = sys.stderr
    sys.stderr = sys.__stderr__
    try:
        resource_tracker.ensure_running()
    finally:
        sys.stderr = saved


def _child_main(
    target: str,
    args: tuple[object, ...],
    conn: multiprocessing.connection.Connection,
    batch_events: int,
    batch_s: float,
    had_safe_path: bool = True,
) -> None:
    """Body of :class:`ProcessSource`'s child: simulate, send batches, then the result.

    The child belongs to its parent: Ctrl-C in the terminal is the app's to
    handle (a terminal sends SIGINT to the whole process group), and when the
    parent goes (quit, SIGTERM, SIGKILL) the child ends at once and quietly,
    instead of printing a BrokenPipeError into the terminal.
    """
    drop_safe_path(had_safe_path)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    end_with_parent()
    buf: list[Event] = []
    last = time.monotonic()

    def send(message: tuple[str, object]) -> None:
        try:
            conn.send(message)
        except (BrokenPipeError, EOFError, OSError):
            os._exit(0)  # the parent is gone: nobody is left to tell

    def flush() -> None:
        nonlocal buf, last
        if buf:
            send(("batch", columnize(buf)))
            buf = []
        last = time.monotonic()

    def collect(event: Event) -> None:
        buf.append(event)
        if len(buf) >= batch_events or (len(buf) % 256 == 0 and time.monotonic() - last >= batch_s):
            flush()

    def stop(message: str) -> None:  # the user's code did not stop at the wall-time limit: say so, then end
        send(("error", message))
        conn.close()
        os._exit(limits.WALL_EXIT_STATUS)

    limits.hard_stop = stop
    try:
        module, func = target.split(":")
        send(("status", ("preparing: topology, tensors, launch", None)))
        fn, metadata = getattr(importlib.import_module(module), func)(*args)
        send(("status", ("simulating: waiting for the first events", metadata if isinstance(metadata, TraceMetadata) else None)))
        bus = Bus()
        bus.subscribe(collect)
        try:
            result = fn(bus)
        finally:
            flush()
        if isinstance(result, Retimer):
            send(("serving", None))
        send(("done", run_metadata(result, metadata)))
        if isinstance(result, Retimer):
            _serve_retimings(result, conn)
    except KernbenchError as exc:
        send(("error", str(exc)))
    except Exception as exc:  # a kernel bug: report it, the parent shows it
        send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def _serve_retimings(run: Retimer, conn: multiprocessing.connection.Connection) -> None:
    """The child after a re-timable run: answer each ``("retime", changes)`` with its events, in batches
    (``("events", [tuple, …])``, as the re-timing publishes them), then ``("retimed", metadata)`` — or with
    ``("refused", one line)`` — until the parent closes the pipe (or ends). Each message is one pickled
    ``send_bytes``; after the answer, the child's CPU seconds (re-timing, of which pickling the events).
    Before the first request, the run may import what re-timing reads (``warm_up()``, if it has one)."""
    warm_up = getattr(run, "warm_up", None)
    if callable(warm_up):
        warm_up()
    while True:
        try:
            tag, changes = conn.recv()
        except (EOFError, OSError):
            return
        if tag != "retime":
            continue
        c0 = time.process_time()
        sender = _EventSender(conn)
        try:
            answer: tuple[str, object] = ("retimed", _retimed(run, changes, sender))
            sender.close()
        except KernbenchError as exc:
            answer = ("refused", str(exc))
        except Exception as exc:  # a bug in re-timing: said in one line, the child stays for the next
            answer = ("refused", f"{type(exc).__name__}: {exc}")
        finally:
            sender.stop()
        try:
            data = pickle.dumps(answer, pickle.HIGHEST_PROTOCOL)
            c1 = time.process_time()
            conn.send_bytes(data)
            conn.send((c1 - c0, sender.encode_s))  # where the child's time went (ChildRetimer.timings)
        except (BrokenPipeError, EOFError, OSError):
            return


def _retimed(run: Retimer, changes: Sequence[str], sender: _EventSender) -> TraceMetadata:
    """Re-time ``run``: its events go to ``sender`` as they are published, where the run can publish them;
    else (a retimer that only makes whole traces) the whole store's events at the end."""
    if isinstance(run, PublishingRetimer):
        bus = TupleBus()
        bus.subscribe(sender.events.append)  # (a C call an event: the sender's thread takes them from the list)
        sender.start()
        return run.retime_published(changes, bus)
    trace = run.retime(changes)
    sender.events.extend(tuple(e) for e in trace.store.events())
    return trace.metadata


class _EventSender:
    """The child's sending of a re-timing's events: the bus appends each (a plain tuple, :class:`TupleBus`)
    to :attr:`events`; a thread takes what has come every ``every_s``, pickles it and sends it, so the
    events reach the parent while the replay goes on. :meth:`close` sends the rest; :meth:`stop` ends the
    thread (also after a failure, when nothing more is sent)."""

    def __init__(self, conn: multiprocessing.connection.Connection, every_s: float = 0.02) -> None:
        self.events: list[tuple[object, ...]] = []
        self.encode_s = 0.0
        self._conn = conn
        self._every_s = every_s
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._send_lock = threading.Lock()
        self.broken = False

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="kernbench-retime-sender", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.wait(self._every_s):
            self._send_some()

    def _send_some(self) -> None:
        with self._send_lock:
            events = self.events
            n = len(events)
            if not n:
                return
            batch = events[:n]
            del events[:n]  # (the bus appends meanwhile: both are single list operations under the GIL)
            if self.broken:
                return
            c0 = time.thread_time()
            data = pickle.dumps(("events", batch), pickle.HIGHEST_PROTOCOL)
            self.encode_s += time.thread_time() - c0
            try:
                self._conn.send_bytes(data)
            except (BrokenPipeError, EOFError, OSError):
                self.broken = True  # the parent is gone: the answer's send finds out too

    def close(self) -> None:
        """The re-timing is done: send what is left (after the thread's last batch: the order is kept)."""
        self.stop()
        self._send_some()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
