"""The loop's writes sent from the loop itself, without a thread per request.

A bind handed to a worker thread costs the scheduler far more than the request: measured per
bound pod in the ``e2e`` benchmark, the bind workers spent about 0.2 ms of CPU and 19
context switches, most of it taking the interpreter lock back from the loop around each
socket call, while the same binding request and its answer cost about 0.04 ms in one thread.
So the loop's writes go through an outbox the loop itself pumps between cycles: a request is
written on a kept-alive non-blocking connection (one request per connection at a time, as
HTTP/1.1 without pipelining allows), and the answers are read, parsed (``http1``) and handed
to their callbacks the next time the loop pumps — no thread switch on either side.

* **Connections** are made as ``keepalive`` makes them (the urllib3 pool the ``ApiClient``
  configured, so TLS is exactly the client's), but by a short-lived dialing thread, so an
  unreachable server never stalls the pumping loop; once connected the socket is switched to
  non-blocking. Up to ``connections`` are kept; more are dialed only while requests wait and
  every connection is busy. A connection the server closed while idle is noticed by the next
  pump (readable at end of stream) and dropped.
* **The rate limit** (``--kube-api-qps``) is the client's token bucket: a request is sent
  once its reserved token is due, instead of a thread sleeping for it.
* **Failures** reach the callback as the urllib3 path raises them with retries off
  (``MaxRetryError`` whose ``reason`` is ``NewConnectionError``, ``ReadTimeoutError`` or
  ``ProtocolError``), as ``keepalive`` raises them, so callers' error handling is the same.
  Nothing is sent twice: a request whose answer was cut short may have been acted on.
* **Who pumps.** The scheduler loop calls ``pump()`` between cycles and waits briefly for
  the queue while requests are in flight; submissions from other threads call ``on_submit``
  so the loop wakes. Users without a loop (tools, tests) call ``start()``, and a thread of
  the outbox's own pumps, waiting on the sockets.
"""

from __future__ import annotations

import contextlib
import http.client
import selectors
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from kubernetes import client as k8s

from policyengine.controller.connection import LIMITER
from policyengine.controller.http1 import host_header, parse_response, request_bytes
from policyengine.controller.keepalive import WireResponse, split_url, transport_error
from policyengine.controller.logs import get_logger

log = get_logger("policyengine.outbox")

Answer = WireResponse | BaseException
Done = Callable[[Answer], None]

# HTTP/1.1 carries one request per connection at a time, so the writes in flight are capped
# at this many: with a write taking 20 ms (etcd's commit on a busy control plane) and about
# 2.5 writes per bound pod, 16 connections would cap the loop near 16 / 0.02 / 2.5 = 320 pods/s.
# kube-scheduler's HTTP/2 client multiplexes a hundred and more streams on one connection.
# Connections are dialed only while requests wait and every open one is busy.
DEFAULT_CONNECTIONS = 64
_RECV = 65536
_WAIT_IDLE = 0.2  # how long the outbox's own thread waits when nothing is due


class _Request:
    __slots__ = ("done", "due", "method", "origin", "seconds", "target", "wire")

    def __init__(
        self,
        method: str,
        origin: str,
        target: str,
        wire: bytes,
        seconds: float | None,
        done: Done,
        due: float,
    ) -> None:
        self.method = method
        self.origin = origin
        self.target = target
        self.wire = wire
        self.seconds = seconds
        self.done = done
        self.due = due


class _Connection:
    """One kept-alive connection and the request on it, if any."""

    __slots__ = ("conn", "deadline", "inbox", "mask", "outgoing", "pool", "request", "sock")

    def __init__(self, pool: Any, conn: Any) -> None:
        self.pool = pool
        self.conn = conn
        self.sock = conn.sock
        self.request: _Request | None = None
        self.outgoing = memoryview(b"")
        self.inbox = b""
        self.deadline: float | None = None
        self.mask = selectors.EVENT_READ  # what the selector watches it for


class Outbox:
    """Writes sent and answered on non-blocking connections (module docstring)."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        *,
        connections: int = DEFAULT_CONNECTIONS,
        connect_timeout: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        on_submit: Callable[[], None] | None = None,
    ) -> None:
        self._client = api_client
        self._limit = max(1, connections)
        self._connect_timeout = connect_timeout
        self._clock = clock
        self.on_submit = on_submit
        self._submitted: deque[_Request] = deque()  # from any thread
        self._waiting: deque[_Request] = deque()  # the pumper's: not yet on a connection
        self._idle: list[_Connection] = []
        self._busy: dict[int, _Connection] = {}  # by file descriptor
        self._lock = threading.Lock()  # the dialing threads' results, and the counts below
        self._dialed: list[tuple[str, Any, Any, Exception | None]] = []
        self._dialing = 0
        self._pending = 0  # submitted and not yet answered
        self._pumping = threading.Lock()
        self._selector = selectors.DefaultSelector()
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_read.setblocking(False)
        self._wake_write.setblocking(False)
        self._selector.register(self._wake_read, selectors.EVENT_READ, None)
        self._asleep = False  # a pumper waits on the selector: wake it on submit
        self._owner: int | None = None  # the loop that pumps, once it says so (``own``)
        self._thread: threading.Thread | None = None
        self._closed = False
        self._hosts: dict[str, tuple[Any, bytes]] = {}  # origin -> (pool, Host header line)

    # ------------------------------------------------------------------ from any thread

    def submit(
        self,
        method: str,
        url: str,
        headers: dict[str, Any],
        data: bytes | None,
        timeout: float | None,
        done: Done,
    ) -> None:
        """Send ``method url`` with the body ``data`` (already encoded); ``done`` gets the
        whole ``WireResponse`` (any status) or the error, on the pumping thread."""
        if self._closed:
            done(ConnectionError("the outbox was closed: the scheduler is stopping"))
            return
        origin, target = split_url(url)
        try:
            _pool, host = self._host(origin)
            wire = request_bytes(method, target, host, headers, data)
        except Exception as error:  # a malformed request: its caller hears of it, not the loop
            done(error)
            return
        limiter = getattr(self._client.rest_client, LIMITER, None)
        due = self._clock() + (limiter.reserve() if limiter is not None else 0.0)
        request = _Request(method, origin, target, wire, timeout, done, due)
        with self._lock:
            self._pending += 1
        self._submitted.append(request)
        if threading.get_ident() != self._owner:
            self._wake()
            if self.on_submit is not None:
                self.on_submit()

    def busy(self) -> bool:
        """Whether a request is waiting or in flight."""
        return self._pending > 0

    def own(self) -> None:
        """The calling thread pumps from now on, between its other work: what it submits
        itself needs no waking (``on_submit`` is for the others)."""
        self._owner = threading.get_ident()

    def start(self) -> None:
        """Pump on a thread of the outbox's own (for users without a loop that pumps)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="outbox", daemon=True)
            self._thread.start()

    def drain(self, timeout: float | None, until: Callable[[], bool] | None = None) -> bool:
        """Pump (or, when a thread pumps, wait) until ``until()`` holds — by default, until
        nothing is pending — or ``timeout`` passes. Whether it holds."""
        finished = until or (lambda: not self.busy())
        # Real time, not the clock of due times (which a test may hold still).
        deadline = None if timeout is None else time.monotonic() + timeout
        while not finished():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            step = 0.05 if left is None else min(0.05, left)
            if self._thread is not None:
                time.sleep(min(step, 0.005))
            else:
                self.pump(step)
        return True

    def close(self) -> None:
        """Stop the thread (if any) and close every connection; what is pending is failed."""
        with self._lock:
            self._closed = True
            dialed, self._dialed = self._dialed, []
        for _origin, _pool, conn, _error in dialed:
            conn.close()
        self._wake()
        if self._thread is not None:
            self._thread.join(5.0)
            self._thread = None
        with self._pumping:
            for request in [*self._submitted, *self._waiting]:
                self._finish(request, ConnectionError("the outbox was closed"))
            self._submitted.clear()
            self._waiting.clear()
            for holder in [*self._idle, *self._busy.values()]:
                if holder.request is not None:
                    self._finish(holder.request, ConnectionError("the outbox was closed"))
                self._drop(holder)
            self._selector.close()
            self._wake_read.close()
            self._wake_write.close()

    # ------------------------------------------------------------------ the pumper's

    def pump(self, wait: float = 0.0) -> None:
        """Send what is due, read what has arrived, run the callbacks of finished requests;
        wait up to ``wait`` seconds for something to arrive first. Does nothing while
        another thread pumps."""
        if not self._pumping.acquire(blocking=False):
            return
        try:
            if not self._closed:
                self._step(wait)
        finally:
            self._pumping.release()

    def _run(self) -> None:
        self._owner = threading.get_ident()
        while not self._closed:
            self.pump(_WAIT_IDLE)

    def _step(self, wait: float) -> None:
        # Read first: an idle connection the server has closed is seen (and dropped) before
        # a request is put on it.
        self._take()
        now = self._clock()
        timeout = wait
        if (
            self._waiting
            and timeout > 0
            and (self._idle or len(self._busy) + self._dialing < self._limit)
        ):
            # A connection could take the next request: wake when it is due.
            timeout = min(timeout, max(0.0, self._waiting[0].due - now))
        if self._busy and timeout > 0:
            deadlines = [h.deadline for h in self._busy.values() if h.deadline is not None]
            if deadlines:
                timeout = min(timeout, max(0.0, min(deadlines) - now))
        self._asleep = timeout > 0
        try:
            if self._asleep and (self._submitted or self._dialed):
                timeout = 0.0  # arrived after _take: no sleeping on them
            ready = self._selector.select(timeout)
        finally:
            self._asleep = False
        for key, events in ready:
            holder = key.data
            if holder is None:
                self._drain_wake()
                continue
            if events & selectors.EVENT_WRITE and holder.outgoing:
                self._write(holder)
            if events & selectors.EVENT_READ and holder.sock.fileno() >= 0:
                self._read(holder)
        self._take()
        now = self._clock()
        self._expire(now)
        self._send(now)

    def _take(self) -> None:
        """Move submissions and dialed connections into the pumper's own lists."""
        submitted = self._submitted
        while submitted:
            self._waiting.append(submitted.popleft())
        if self._dialed:
            with self._lock:
                dialed, self._dialed = self._dialed, []
            for origin, pool, conn, error in dialed:
                with self._lock:
                    self._dialing -= 1
                if error is not None:
                    self._dial_failed(origin, pool, error)
                    continue
                holder = _Connection(pool, conn)
                self._idle.append(holder)
                self._selector.register(holder.sock, selectors.EVENT_READ, holder)

    def _send(self, now: float) -> None:
        """Put due requests on idle connections; dial when every one is busy."""
        waiting = self._waiting
        while waiting and waiting[0].due <= now:
            request = waiting[0]
            holder = self._idle_for(request.origin)
            if holder is None:
                self._dial_for(request, len(waiting))
                return
            waiting.popleft()
            holder.request = request
            holder.outgoing = memoryview(request.wire)
            holder.inbox = b""
            holder.deadline = None if request.seconds is None else now + request.seconds
            self._busy[holder.sock.fileno()] = holder
            self._write(holder)

    def _idle_for(self, origin: str) -> _Connection | None:
        idle = self._idle
        pool = self._hosts[origin][0]
        for i in range(len(idle) - 1, -1, -1):  # the most recently used first: warm
            if idle[i].pool is pool:
                return idle.pop(i)
        return None

    def _dial_for(self, request: _Request, waiting: int) -> None:
        open_now = len(self._idle) + len(self._busy)
        with self._lock:
            if self._dialing >= waiting or open_now + self._dialing >= self._limit:
                return
            self._dialing += 1
        pool = self._hosts[request.origin][0]
        threading.Thread(
            target=self._dial, args=(request.origin, pool), name="outbox-dial", daemon=True
        ).start()

    def _dial(self, origin: str, pool: Any) -> None:
        conn = pool._new_conn()  # configured as the pool configures its own (TLS included)
        conn.timeout = self._connect_timeout
        error: Exception | None = None
        try:
            conn.connect()
            conn.sock.setblocking(False)
        except Exception as exc:  # reported to the requests waiting for it
            conn.close()
            error = exc
        with self._lock:
            if self._closed:  # closed while dialing: nobody will take it
                conn.close()
                return
            self._dialed.append((origin, pool, conn, error))
        self._wake()

    def _dial_failed(self, origin: str, pool: Any, error: Exception) -> None:
        """Every request waiting for a connection to ``origin`` fails as it would have."""
        if self._dialing > 0 or any(h.pool is pool for h in (*self._idle, *self._busy.values())):
            return  # another connection to the server will carry them
        failing = [r for r in self._waiting if r.origin == origin]
        self._waiting = deque(r for r in self._waiting if r.origin != origin)
        for request in failing:
            self._finish(request, transport_error(pool, request.target, error, request.seconds))

    def _write(self, holder: _Connection) -> None:
        try:
            sent = holder.sock.send(holder.outgoing)
        except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
            sent = 0
        except OSError as error:
            self._broken(holder, error)
            return
        holder.outgoing = holder.outgoing[sent:]
        self._watch(
            holder, selectors.EVENT_READ | (selectors.EVENT_WRITE if holder.outgoing else 0)
        )

    def _read(self, holder: _Connection) -> None:
        sock = holder.sock
        chunks = []
        eof = False
        try:
            while True:
                chunk = sock.recv(_RECV)
                if not chunk:
                    eof = True
                    break
                chunks.append(chunk)
                tls_pending = isinstance(sock, ssl.SSLSocket) and sock.pending()
                if len(chunk) < _RECV and not tls_pending:
                    break
        except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            pass
        except OSError as error:
            if holder.request is None:
                self._drop(holder)
            else:
                self._broken(holder, error)
            return
        request = holder.request
        if request is None:
            # Idle: the server closed it (or said something unasked): not reusable.
            self._drop(holder)
            return
        holder.inbox += b"".join(chunks)
        try:
            parsed = parse_response(holder.inbox, request.method, eof)
        except (OSError, http.client.HTTPException) as error:
            self._broken(holder, error)
            return
        if parsed is None:
            return
        response, rest = parsed
        # Reused only when the exchange ended cleanly: nothing after the answer, nothing of
        # the request left unwritten (a server may answer early, as with a 413).
        clean = not (response.will_close or rest or eof or holder.outgoing)
        self._release(holder, reusable=clean)
        self._finish(request, WireResponse(response))

    def _expire(self, now: float) -> None:
        for holder in list(self._busy.values()):
            request = holder.request
            if request is not None and holder.deadline is not None and now >= holder.deadline:
                self._release(holder, reusable=False)
                late = transport_error(holder.pool, request.target, TimeoutError(), request.seconds)
                self._finish(request, late)

    def _broken(self, holder: _Connection, error: Exception) -> None:
        request = holder.request
        self._release(holder, reusable=False)
        if request is not None:
            self._finish(
                request, transport_error(holder.pool, request.target, error, request.seconds)
            )

    def _release(self, holder: _Connection, *, reusable: bool) -> None:
        self._busy.pop(holder.sock.fileno(), None)
        holder.request = None
        holder.deadline = None
        holder.inbox = b""
        holder.outgoing = memoryview(b"")
        if reusable and not self._closed:
            self._watch(holder, selectors.EVENT_READ)
            self._idle.append(holder)
        else:
            self._drop(holder)

    def _watch(self, holder: _Connection, mask: int) -> None:
        if holder.mask != mask:  # a system call each: only on a change
            holder.mask = mask
            self._selector.modify(holder.sock, mask, holder)

    def _drop(self, holder: _Connection) -> None:
        if holder in self._idle:
            self._idle.remove(holder)
        self._busy.pop(holder.sock.fileno(), None)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(holder.sock)
        holder.conn.close()

    def _finish(self, request: _Request, answer: Answer) -> None:
        with self._lock:
            self._pending -= 1
        try:
            request.done(answer)
        except Exception:
            log.exception("write callback failed", request=f"{request.method} {request.target}")

    # ------------------------------------------------------------------ helpers

    def _host(self, origin: str) -> tuple[Any, bytes]:
        known = self._hosts.get(origin)
        if known is None:
            pool = self._client.rest_client.pool_manager.connection_from_url(origin)
            known = self._hosts[origin] = (pool, host_header(pool._new_conn()))
        return known

    def _wake(self) -> None:
        if self._asleep:
            # Full (a wake is pending anyway) or closed: either way nothing to do.
            with contextlib.suppress(OSError):
                self._wake_write.send(b"\0")

    def _drain_wake(self) -> None:
        with contextlib.suppress(OSError):
            while self._wake_read.recv(4096):
                pass
