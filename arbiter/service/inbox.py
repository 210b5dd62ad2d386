"""`Inbox`: the replies of one solver process, read off its pipe by the event loop.

The pool used to park a thread in a blocking `Connection.recv()` per running request; at
concurrency 32 on 2 cores those threads fought the event loop for the GIL (each hand-over
can wait out the 5 ms switch interval). An inbox instead registers the pipe's descriptor
with the loop (`add_reader`), takes whatever bytes are there, and cuts them into messages
as `multiprocessing.connection.Connection.send` frames them: a 4-byte big-endian signed
length (or -1 followed by an 8-byte length for messages over 2 GiB), then the pickle.
A worker that dies closes its end: the waiting caller gets `EOFError`.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import struct
from collections import deque
from multiprocessing.connection import Connection
from typing import Any

_READ_CHUNK = 1 << 18


def frames(buffer: bytearray) -> list[bytes]:
    """Cut the complete messages off the front of `buffer` (left holding the rest)."""
    out: list[bytes] = []
    while len(buffer) >= 4:
        (size,) = struct.unpack_from("!i", buffer)
        start = 4
        if size == -1:
            if len(buffer) < 12:
                break
            (size,) = struct.unpack_from("!Q", buffer, 4)
            start = 12
        if len(buffer) < start + size:
            break
        out.append(bytes(buffer[start : start + size]))
        del buffer[: start + size]
    return out


class Inbox:
    """Messages from the read end of a one-way pipe, delivered to `get()` in order."""

    def __init__(self, conn: Connection, loop: asyncio.AbstractEventLoop):
        self.conn = conn
        self.loop = loop
        self.fd = conn.fileno()
        os.set_blocking(self.fd, False)
        self._buffer = bytearray()
        self._messages: deque[Any] = deque()
        self._waiter: asyncio.Future[Any] | None = None
        self.eof = False
        loop.add_reader(self.fd, self._readable)

    def get(self) -> asyncio.Future[Any]:
        """A future of the next message; EOFError once the other end is closed."""
        future: asyncio.Future[Any] = self.loop.create_future()
        if self._messages:
            future.set_result(self._messages.popleft())
        elif self.eof:
            future.set_exception(EOFError("the solver process closed its pipe"))
        else:
            self._waiter = future
        return future

    def close(self) -> None:
        """Stop reading and close the descriptor (idempotent)."""
        if not self.conn.closed:
            self.loop.remove_reader(self.fd)
            self.conn.close()
        self._closed_for_good()

    def _readable(self) -> None:
        try:
            chunk = os.read(self.fd, _READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            self.loop.remove_reader(self.fd)
            self._closed_for_good()
            return
        self._buffer += chunk
        for frame in frames(self._buffer):
            self._deliver(pickle.loads(frame))

    def _deliver(self, message: Any) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(message)
        else:
            self._messages.append(message)

    def _closed_for_good(self) -> None:
        self.eof = True
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(EOFError("the solver process closed its pipe"))
