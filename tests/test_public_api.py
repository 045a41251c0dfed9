"""The public API is what __all__ says, sorted, and every name resolves."""

import subprocess
import sys

import langmem_plus


def test_all_is_sorted_and_resolves() -> None:
    names = [n for n in langmem_plus.__all__ if n != "__version__"]
    assert langmem_plus.__all__ == sorted(langmem_plus.__all__, key=str)
    for name in names:
        assert getattr(langmem_plus, name) is not None, name


def test_unknown_attribute_is_an_attribute_error() -> None:
    try:
        langmem_plus.DoesNotExist  # noqa: B018
    except AttributeError as exc:
        assert "DoesNotExist" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("no AttributeError")


def test_plain_import_does_not_load_chromadb_or_langgraph() -> None:
    code = "import sys, langmem_plus; print('chromadb' in sys.modules, 'langgraph' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_cli_discovers_bench_modules() -> None:
    out = subprocess.run([sys.executable, "-m", "langmem_plus.cli", "bench", "--help"], capture_output=True, text=True, check=True)
    assert "foundation" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "langmem_plus.cli", "bench", "nope"], capture_output=True, text=True)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


def test_cognitive_memory_is_public_and_light() -> None:
    from langmem_plus.memory_types import CognitiveMemory

    assert "CognitiveMemory" in langmem_plus.__all__ and "InvalidArgument" in langmem_plus.__all__
    assert langmem_plus.CognitiveMemory is CognitiveMemory
    assert issubclass(langmem_plus.InvalidArgument, (langmem_plus.LangmemPlusError, ValueError))
    code = "import sys; from langmem_plus import CognitiveMemory; print('chromadb' in sys.modules, 'langgraph' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]
