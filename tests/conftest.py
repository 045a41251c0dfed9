"""Shared fixtures: a real ``chroma run`` server, a temporary store path, and a real text game.

``chroma_server`` starts chromadb's own CLI server on a free 127.0.0.1 port (once
per session), waits for its heartbeat, yields its URL and stops it at the end.
Tests that use it are marked ``@pytest.mark.server``; it skips cleanly when the
``chroma`` executable is not installed.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from langmem_plus.bench.server import chroma_executable
from langmem_plus.bench.server import running_chroma_server as _running
from langmem_plus.errors import StoreUnavailable

if TYPE_CHECKING:
    from langmem_plus.envs.sciworld import SciWorldServer
    from langmem_plus.envs.textgame import TextGameEnv


@contextmanager
def running_chroma_server(data_dir: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``bench.server.running_chroma_server``, skipping the test when no ``chroma`` CLI is installed."""
    if chroma_executable() is None:
        pytest.skip("the `chroma` CLI (installed with chromadb) was not found beside python or on PATH")
    with ExitStack() as stack:
        try:
            running = stack.enter_context(_running(data_dir))
        except StoreUnavailable as exc:  # the server did not come up: a failure, not a skip
            pytest.fail(str(exc))
        yield running


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


@pytest.fixture(scope="module")
def cooking() -> Iterator["TextGameEnv"]:
    """A real TextWorldExpress CookingWorld (easy setting) for a test module; skips without the extra or Java."""
    pytest.importorskip("textworld_express")
    if shutil.which("java") is None:
        pytest.skip("the text games need a Java runtime")
    from langmem_plus.envs.registry import make_env
    from langmem_plus.envs.textgame import TextGameEnv

    env = make_env("twx-cooking:easy")
    assert isinstance(env, TextGameEnv)
    yield env
    env.close()


@pytest.fixture(scope="module")
def sciworld_server() -> Iterator["SciWorldServer"]:
    """One ScienceWorld JVM for a test module (skips without the ``envs`` extra or Java)."""
    pytest.importorskip("scienceworld")
    if shutil.which("java") is None:
        pytest.skip("ScienceWorld needs a Java runtime")
    from langmem_plus.envs.sciworld import SciWorldServer

    jvm = SciWorldServer()
    yield jvm
    jvm.close()
