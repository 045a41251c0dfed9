"""The public API is what __all__ says, sorted, every name resolves, and names and signatures are pinned."""

import difflib
import importlib
import inspect
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

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


def test_cognitive_memory_is_importable_and_light() -> None:
    from langmem_plus.memory_types import CognitiveMemory

    assert CognitiveMemory.__name__ == "CognitiveMemory" and "InvalidArgument" in langmem_plus.__all__
    assert issubclass(langmem_plus.InvalidArgument, (langmem_plus.LangmemPlusError, ValueError))
    code = "import sys; from langmem_plus.memory_types import CognitiveMemory; print('chromadb' in sys.modules, 'langgraph' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


# --------------------------------------------------------------------------- the entry points, and the names that moved


def test_all_keeps_to_the_entry_points() -> None:
    assert len(langmem_plus.__all__) <= 25
    assert {"LearningMemory", "MemoryConfig", "Run", "LearningMiddleware", "LangmemPlusError"} <= set(langmem_plus.__all__)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an entry point never warns
        for name in langmem_plus.__all__:
            getattr(langmem_plus, name)


@pytest.mark.parametrize("name", sorted(langmem_plus._MOVED))
def test_a_moved_name_still_imports_with_a_warning_naming_its_module(name: str) -> None:
    module = langmem_plus._MOVED[name]
    assert name not in langmem_plus.__all__ and name not in dir(langmem_plus)
    with pytest.warns(DeprecationWarning, match=re.escape(f"from {module} import {name}")):
        value = getattr(langmem_plus, name)
    assert value is getattr(importlib.import_module(module), name)


def test_from_import_of_a_moved_name_warns_at_the_importer() -> None:
    with pytest.warns(DeprecationWarning, match="langmem_plus.records") as caught:
        from langmem_plus import ScoredItem  # noqa: F401
    assert caught[0].filename == __file__


# --------------------------------------------------------------------------- the pinned surface

PINNED = Path(__file__).with_name("public_api.txt")
"""Every public name with its signature (and each public class's public methods). Regenerate
deliberately with ``python tests/test_public_api.py --update`` when a change is intended."""


def _collapsed(text: str, opening: str) -> str:
    """``text`` with every ``opening...)`` call, nested parentheses included, written ``opening...)``."""
    out, at = [], 0
    while (start := text.find(opening, at)) >= 0:
        depth, end = 0, start + len(opening) - 1
        for end in range(start + len(opening) - 1, len(text)):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            if depth == 0:
                break
        out.append(text[at:start] + opening + "...)")
        at = end + 1
    return "".join(out) + text[at:]


class _Factory:
    """A pydantic field's default factory, shown as newer pydantic shows it (older releases show ``None``)."""

    def __repr__(self) -> str:
        return "<factory>"


def _signature(obj: object) -> str:
    """The signature as text; a config default shows as ``MemoryConfig(...)`` (its fields are pinned by name elsewhere)."""
    try:
        sig = inspect.signature(obj)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "(...)"
    fields = getattr(obj, "model_fields", None) if inspect.isclass(obj) else None
    if isinstance(fields, dict):
        sig = sig.replace(parameters=[
            p.replace(default=_Factory()) if getattr(fields.get(p.name), "default_factory", None) is not None else p
            for p in sig.parameters.values()])
    text = str(sig)
    text = _collapsed(text, "MemoryConfig(")
    # A bound's number as written: pydantic shows ``Ge(ge=0)`` or ``Ge(ge=0.0)`` for one field depending on
    # what was imported first, so ``0.0`` and ``0`` are one bound here.
    return re.sub(r"\b(ge|gt|le|lt)=(-?\d+)\.0\)", r"\1=\2)", text)


def public_api_lines() -> list[str]:
    """One line per public name: its kind and signature; classes add their public methods and properties. Then one
    line per name that moved out of ``__all__`` (it still imports from the package, with a warning): its module.
    Signatures show a config default as ``MemoryConfig(...)`` and a field's default factory as ``<factory>``, so
    the pin is the API's names and signatures, not the values ``MemoryConfig`` defaults to."""
    lines: list[str] = []
    for name in sorted(n for n in langmem_plus.__all__ if n != "__version__"):
        obj = getattr(langmem_plus, name)
        if inspect.isclass(obj):
            lines.append(f"class {name}{_signature(obj)}")
            for attr, member in sorted(vars(obj).items()):
                if attr.startswith("_") or attr.startswith("model_"):
                    continue
                if isinstance(member, property):
                    lines.append(f"    property {name}.{attr}")
                elif isinstance(member, (staticmethod, classmethod)) or inspect.isfunction(member):
                    lines.append(f"    def {name}.{attr}{_signature(getattr(obj, attr))}")
        elif callable(obj):
            lines.append(f"def {name}{_signature(obj)}")
        else:
            lines.append(f"value {name}: {type(obj).__name__}")
    lines += [f"moved {name}: {module}" for name, module in sorted(langmem_plus._MOVED.items())]
    return lines


def test_public_api_is_pinned() -> None:
    """A rename or a signature change is a decision: it shows up here and in the pinned file's diff."""
    current = public_api_lines()
    pinned = PINNED.read_text(encoding="utf-8").splitlines()
    if current != pinned:
        diff = "\n".join(difflib.unified_diff(pinned, current, "pinned", "current", lineterm=""))
        raise AssertionError(f"the public API changed; if intended run `python tests/test_public_api.py --update`\n{diff}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--update"]:
        PINNED.write_text("\n".join(public_api_lines()) + "\n", encoding="utf-8")
        print(f"wrote {PINNED}")
