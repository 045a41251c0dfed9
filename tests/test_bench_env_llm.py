"""``bench env`` with ``LLMExecutor``: a fake chat model offline, a live one when configured."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from langmem_plus.bench.env import run_env_bench
from langmem_plus.errors import InvalidArgument
from langmem_plus.executors.llm import LLMExecutor, openai_compatible_chat

_LISTED = re.compile(r"VALID ACTIONS NOW \(data; choose one exactly\)[^:]*: (\[.*\])")


class PicksFromTheList(BaseChatModel):
    """Test-only chat model: answers with a valid action taken from its prompt (the k-th, k = steps shown so far)."""

    prompts: list[str] = []

    @property
    def _llm_type(self) -> str:
        return "picks-from-the-list"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
        prompt = str(messages[-1].content)
        self.prompts.append(prompt)
        listed = _LISTED.search(prompt)
        choices = json.loads(listed.group(1)) if listed else ["look around"]
        k = prompt.count("\n- step ")
        answer = json.dumps({"kind": "command", "action": choices[k % len(choices)]})
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=answer))])


@pytest.fixture(scope="module")
def games() -> None:
    pytest.importorskip("textworld_express")
    if shutil.which("java") is None:
        pytest.skip("the text games need a Java runtime")


def test_bench_env_runs_every_design_through_the_llm_executor(games: None) -> None:
    model = PicksFromTheList(prompts=[])
    result = run_env_bench(env_name="twx-cooking:easy", collect="0-2", seeds="0-1", fold="dev", repeats=1, max_steps=6,
                           designs=("no_memory", "langmem_plus"), executor_factory=lambda seed: LLMExecutor(model, docs_allowed=False),
                           executor_name="llm:fake")
    assert result["executor"] == "llm:fake"
    assert all(fig["steps"] > 0 for fig in result["designs"].values())
    # every step of every attempt was one model call that saw the game's valid actions
    assert model.prompts and all("VALID ACTIONS NOW" in p for p in model.prompts)
    assert len(model.prompts) >= 2 * (3 + 2)  # two designs x five attempts, at least one step each
    for fig in result["designs"].values():
        assert fig["invalid_actions"] == 0.0  # it only ever picked listed actions
    assert result["designs"]["no_memory"]["context_tokens_per_task"] == 0


def test_cli_llm_flags_reach_the_bench(games: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from langmem_plus.cli import main

    seen: dict[str, str] = {}
    model = PicksFromTheList(prompts=[])

    def fake_chat(base_url: str, name: str, *, api_key: str | None = None, temperature: float = 0.0) -> BaseChatModel:
        seen.update(base_url=base_url, model=name)
        return model

    monkeypatch.setattr("langmem_plus.executors.llm.openai_compatible_chat", fake_chat)
    code = main(["bench", "env", "--env", "twx-cooking:easy", "--collect-seeds", "0", "--seeds", "0", "--fold", "dev",
                 "--repeats", "1", "--max-steps", "4", "--designs", "no_memory", "--json",
                 "--llm-base-url", "http://127.0.0.1:1/v1", "--llm-model", "tiny"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["executor"] == "llm:tiny" and seen == {"base_url": "http://127.0.0.1:1/v1", "model": "tiny"}
    assert len(model.prompts) >= 2  # collection and deployment each asked the model


def test_missing_langchain_openai_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from langmem_plus.cli import main

    monkeypatch.setitem(sys.modules, "langchain_openai", None)  # import now raises ImportError
    with pytest.raises(InvalidArgument, match=r"pip install 'langmem-plus\[openai\]'"):
        openai_compatible_chat("http://127.0.0.1:1/v1", "m")
    code = main(["bench", "env", "--llm-base-url", "http://127.0.0.1:1/v1", "--llm-model", "m"])
    assert code == 2 and "langmem-plus[openai]" in capsys.readouterr().err


def test_llm_flags_go_together(capsys: pytest.CaptureFixture[str]) -> None:
    from langmem_plus.cli import main

    assert main(["bench", "env", "--llm-model", "m"]) == 2
    assert "--llm-base-url and --llm-model go together" in capsys.readouterr().err


def test_openai_compatible_chat_points_at_the_endpoint() -> None:
    pytest.importorskip("langchain_openai")
    chat = openai_compatible_chat("http://127.0.0.1:1/v1", "tiny", api_key="k")
    assert getattr(chat, "model_name", None) == "tiny"
    assert str(getattr(chat, "openai_api_base", "")) == "http://127.0.0.1:1/v1"


LIVE_URL = os.environ.get("LANGMEM_PLUS_LLM_BASE_URL") or ("https://api.openai.com/v1" if os.environ.get("OPENAI_API_KEY") else "")
LIVE_MODEL = os.environ.get("LANGMEM_PLUS_LLM_MODEL") or ("gpt-4o-mini" if os.environ.get("OPENAI_API_KEY") else "")


@pytest.mark.skipif(not (LIVE_URL and LIVE_MODEL), reason="no live model: set LANGMEM_PLUS_LLM_BASE_URL and LANGMEM_PLUS_LLM_MODEL, or OPENAI_API_KEY")
def test_live_model_plays_the_bench(games: None) -> None:
    pytest.importorskip("langchain_openai")
    from langmem_plus.bench.env import llm_executor_factory

    result = run_env_bench(env_name="twx-cooking:easy", collect="0", seeds="0", fold="dev", repeats=1, max_steps=8,
                           designs=("langmem_plus",), executor_factory=llm_executor_factory(LIVE_URL, LIVE_MODEL),
                           executor_name=f"llm:{LIVE_MODEL}")
    fig = result["designs"]["langmem_plus"]
    assert fig["steps"] > 0 and fig["invalid_actions"] < fig["steps"]  # the model mostly chose listed actions


def test_the_prompt_shows_a_hints_precondition() -> None:
    from langmem_plus.executors.llm import render_prompt
    from langmem_plus.records import Hint, TaskSpec

    hint = Hint(text="Prefer `cook <X> in oven`", precondition="when the task says `roast <X>`", source_id="l1")
    prompt = render_prompt(TaskSpec(task_id="t", goal="g"), [], [hint], docs_allowed=False)
    assert '- "Prefer `cook <X> in oven` when the task says `roast <X>`"' in prompt.splitlines()
