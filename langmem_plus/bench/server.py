"""A real ``chroma run`` server on 127.0.0.1, started and stopped by whoever needs one.

The reliability bench shares one namespace between processes through it, and the
tests use it for their server cases. Only the loopback address is ever used.

Example:
    >>> with running_chroma_server(Path(tempfile.mkdtemp()) / "data") as (url, proc):  # doctest: +SKIP
    ...     memory = LearningMemory.open(url=url, namespace=("acme",))
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from langmem_plus.errors import StoreUnavailable

SERVER_START_TIMEOUT_S = 30.0
"""Seconds a fresh ``chroma run`` may take to answer its heartbeat."""
SERVER_STOP_TIMEOUT_S = 10.0
"""Seconds to wait after SIGTERM before killing the server."""
HEARTBEAT = "/api/v2/heartbeat"
"""Chroma's liveness endpoint."""


def chroma_executable() -> str | None:
    """The ``chroma`` CLI installed beside this interpreter, else the one on PATH; None without one."""
    beside = Path(sys.executable).parent / "chroma"
    if beside.exists():
        return str(beside)
    return shutil.which("chroma")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_heartbeat(proc: subprocess.Popen[bytes], url: str, log_path: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log_path.read_text(errors="replace")[-2000:]
            raise StoreUnavailable(f"`chroma run` exited with code {proc.returncode}:\n{tail}")
        try:
            if httpx.get(url + HEARTBEAT, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise StoreUnavailable(f"`chroma run` did not answer {url}{HEARTBEAT} within {SERVER_START_TIMEOUT_S} s")


@contextmanager
def running_chroma_server(data_dir: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Run ``chroma run`` on a free 127.0.0.1 port over ``data_dir``; yield ``(url, process)``; stop it after.

    Raises:
        StoreUnavailable: no ``chroma`` CLI is installed, or the server does not come up.
    """
    exe = chroma_executable()
    if exe is None:
        raise StoreUnavailable("the `chroma` CLI (installed with chromadb) was not found beside python or on PATH")
    data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = data_dir.parent / f"chroma_server_{port}.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [exe, "run", "--path", str(data_dir), "--host", "127.0.0.1", "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        try:
            _wait_for_heartbeat(proc, url, log_path)
            yield url, proc
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=SERVER_STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


__all__ = ["HEARTBEAT", "chroma_executable", "free_port", "running_chroma_server"]
