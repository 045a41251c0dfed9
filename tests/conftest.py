"""Shared fixtures: a real ``chroma run`` server and a temporary store path.

``chroma_server`` starts chromadb's own CLI server on a free 127.0.0.1 port (once
per session), waits for its heartbeat, yields its URL and stops it at the end.
Tests that use it are marked ``@pytest.mark.server``; it skips cleanly when the
``chroma`` executable is not installed.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import httpx
import pytest

SERVER_START_TIMEOUT_S = 30.0
"""Seconds a fresh ``chroma run`` may take to answer its heartbeat."""
SERVER_STOP_TIMEOUT_S = 10.0
"""Seconds to wait after SIGTERM before killing the server."""
HEARTBEAT = "/api/v2/heartbeat"


def _chroma_executable() -> str | None:
    """The ``chroma`` CLI installed beside this interpreter, else the one on PATH."""
    beside = Path(sys.executable).parent / "chroma"
    if beside.exists():
        return str(beside)
    return shutil.which("chroma")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_heartbeat(proc: subprocess.Popen[bytes], url: str, log_path: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log_path.read_text(errors="replace")[-2000:]
            pytest.fail(f"`chroma run` exited with code {proc.returncode}:\n{tail}")
        try:
            if httpx.get(url + HEARTBEAT, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    pytest.fail(f"`chroma run` did not answer {url}{HEARTBEAT} within {SERVER_START_TIMEOUT_S} s")


@contextmanager
def running_chroma_server(data_dir: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Run ``chroma run`` on a free port over ``data_dir``; yield ``(url, process)``; stop it after."""
    exe = _chroma_executable()
    if exe is None:
        pytest.skip("the `chroma` CLI (installed with chromadb) was not found beside python or on PATH")
    data_dir.mkdir(parents=True, exist_ok=True)
    port = _free_port()
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


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL (``http://127.0.0.1:<port>``) of a real Chroma server shared by the test session."""
    with running_chroma_server(tmp_path_factory.mktemp("chroma_server") / "data") as (url, _):
        yield url


@pytest.fixture
def spawn_chroma_server() -> Callable[[Path], AbstractContextManager[tuple[str, subprocess.Popen[bytes]]]]:
    """``running_chroma_server`` for tests that need a server of their own (e.g. to kill it)."""
    return running_chroma_server


@pytest.fixture
def tmp_store_path(tmp_path: Path) -> Path:
    """A not-yet-existing directory for an embedded store."""
    return tmp_path / "store"
