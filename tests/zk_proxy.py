"""A TCP proxy in front of a real ZooKeeper that cuts the connection at a chosen request.

This is how the tests lose a ZooKeeper reply on purpose, at the one moment that matters (a
release in flight, a create applied by the server whose answer never arrives), without pausing
the server: the session survives, so what is left behind stays unless the client cleans it up.
It reads the client's frames (jute: a 4-byte length, then xid and op code; the first frame of
a connection is the ConnectRequest) to know which request it is cutting at.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time

from inventory.local.servers import free_port

CREATE, DELETE, MULTI, CREATE2 = 1, 2, 14, 15


class CuttingProxy:
    def __init__(self, target_port: int) -> None:
        self.target = ("127.0.0.1", target_port)
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._guard = threading.Lock()
        self._armed: tuple[frozenset[int], bool] | None = None
        self._refuse_until = 0.0
        self._refuse_for = 0.0
        self.cuts = 0
        self.reconnects_refused = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def cut_at(self, ops: set[int], applied: bool, then_refuse_for: float = 0.0) -> None:
        """Cut the connection at the next request with one of these op codes. applied=True
        forwards it first and drops the server's reply (done, answer lost); False drops the
        request (never done). New connections are then refused for a while."""
        with self._guard:
            self._armed = (frozenset(ops), applied)
            self._refuse_for = then_refuse_for

    def close(self) -> None:
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if time.monotonic() < self._refuse_until:
                self.reconnects_refused += 1
                client.close()
                continue
            try:
                server = socket.create_connection(self.target)
            except OSError:  # the server is down (restarting): the client tries again
                client.close()
                continue
            muted = threading.Event()
            threading.Thread(
                target=self._upstream, args=(client, server, muted), daemon=True
            ).start()
            threading.Thread(
                target=self._downstream, args=(server, client, muted), daemon=True
            ).start()

    def _upstream(
        self, client: socket.socket, server: socket.socket, muted: threading.Event
    ) -> None:
        buffer = b""
        first = True
        try:
            while chunk := client.recv(65536):
                buffer += chunk
                while len(buffer) >= 4:
                    size = struct.unpack(">i", buffer[:4])[0]
                    if len(buffer) < 4 + size:
                        break
                    frame, buffer = buffer[: 4 + size], buffer[4 + size :]
                    op = None if first else struct.unpack(">ii", frame[4:12])[1]
                    first = False
                    if op is not None and self._trigger(op):
                        self._cut(client, server, frame, muted)
                        return
                    server.sendall(frame)
        except OSError:
            pass
        _close(client, server)

    def _trigger(self, op: int) -> bool:
        with self._guard:
            return not (self._armed is None or op not in self._armed[0])

    def _cut(
        self, client: socket.socket, server: socket.socket, frame: bytes, muted: threading.Event
    ) -> None:
        with self._guard:
            assert self._armed is not None
            applied = self._armed[1]
            self._armed = None
            self._refuse_until = time.monotonic() + self._refuse_for
            self.cuts += 1
        muted.set()
        if applied:
            server.sendall(frame)
            time.sleep(0.3)  # the server applies it and answers; the answer goes nowhere
        _close(client, server)

    def _downstream(
        self, server: socket.socket, client: socket.socket, muted: threading.Event
    ) -> None:
        try:
            while chunk := server.recv(65536):
                if muted.is_set():
                    continue
                client.sendall(chunk)
        except OSError:
            pass
        _close(client, server)


def _close(*sockets: socket.socket) -> None:
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()
