"""Strict-JSON calls to any BaseChatModel: ask, validate, retry once, or give up cleanly.

Every LLM path in langmem_plus (lesson synthesis, hint distillation, the judge) goes
through ``invoke_json``: the answer must be one JSON object that validates against a
pydantic model. A bad answer is retried once with the validation error quoted back;
a second bad answer raises ``ModelOutputError`` so the caller can take its offline
path. Model output is data: it is parsed, never executed.

Example:
    >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
    >>> from pydantic import BaseModel
    >>> class Out(BaseModel):
    ...     ok: bool
    >>> invoke_json(FakeListChatModel(responses=['{"ok": true}']), "say ok", Out).ok
    True
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ValidationError

from langmem_plus.errors import ModelOutputError

logger = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
RETRIES = 1
"""Retries after a bad answer before the offline path (design.md §6: one retry)."""


def message_text(message: BaseMessage | str) -> str:
    """The text of a chat message, whatever shape its content has."""
    if isinstance(message, str):
        return message
    content = message.content
    if isinstance(content, str):
        return content
    parts = [p.get("text", "") if isinstance(p, dict) else str(p) for p in content]
    return "".join(parts)


ANSWER_MAX_CHARS = 65_536
"""Characters of a model answer searched for its JSON object; an answer is a short object, so
a longer one is cut (a confused or hostile model cannot make parsing slow)."""
JSON_STARTS_MAX = 16
"""Opening braces tried as the start of the object, per candidate: each try may parse to the
end of the text, so the tries are bounded (without it, 1 MB of ``{"a": "`` took ~14 s)."""


def extract_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text`` (bare or fenced), or ModelOutputError.

    Bounded work on any input: ``ANSWER_MAX_CHARS`` characters and ``JSON_STARTS_MAX`` tries;
    nesting too deep to decode is not an object (never a RecursionError).
    """
    text = text[:ANSWER_MAX_CHARS]
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for cand in candidates:
        start = cand.find("{")
        for _ in range(JSON_STARTS_MAX):
            if start == -1:
                break
            try:
                obj, _ = json.JSONDecoder().raw_decode(cand[start:])
            except (json.JSONDecodeError, RecursionError):
                obj = None
            if isinstance(obj, dict):
                return obj
            start = cand.find("{", start + 1)
    raise ModelOutputError(f"no JSON object in model answer: {text[:200]!r}")


def parse_json_as(text: str, schema: type[M]) -> M:
    """Parse and validate a model answer as ``schema``, or raise ModelOutputError."""
    obj = extract_json_object(text)
    try:
        return schema.model_validate(obj)
    except ValidationError as exc:
        raise ModelOutputError(f"model JSON does not match {schema.__name__}: {exc.errors()[:3]}") from exc


def _messages(prompt: str | list[BaseMessage], system: str | None) -> list[BaseMessage]:
    msgs: list[BaseMessage] = [SystemMessage(content=system)] if system else []
    if isinstance(prompt, str):
        msgs.append(HumanMessage(content=prompt))
    else:
        msgs.extend(prompt)
    return msgs


def invoke_json(
    model: BaseChatModel,
    prompt: str | list[BaseMessage],
    schema: type[M],
    *,
    system: str | None = None,
    retries: int = RETRIES,
) -> M:
    """Ask ``model`` for one JSON object matching ``schema``; retry with the error, then raise.

    Raises:
        ModelOutputError: the answers could not be parsed or validated, or the model failed.
    """
    msgs = _messages(prompt, system)
    last_error: Exception | None = None
    for attempt in range(retries + 1):
        try:
            answer = model.invoke(msgs)
        except Exception as exc:  # a provider error is a bad answer too; the caller falls back
            raise ModelOutputError(f"chat model call failed: {type(exc).__name__}: {exc}") from exc
        text = message_text(answer)
        try:
            return parse_json_as(text, schema)
        except ModelOutputError as exc:
            last_error = exc
            logger.info("langmem_plus: bad model JSON (attempt %d): %s", attempt + 1, exc)
            msgs = msgs + [
                AIMessage(content=text),
                HumanMessage(
                    content=f"That answer was not valid: {exc}. Reply with only one JSON object "
                    f"with the fields {sorted(schema.model_fields)}."
                ),
            ]
    raise ModelOutputError(str(last_error))


def quote_data(text: str, limit: int = 2000) -> str:
    """Quote untrusted text for a prompt: one JSON string, so it reads as data, not instructions."""
    return json.dumps(text[:limit], ensure_ascii=False)


__all__ = ["extract_json_object", "invoke_json", "message_text", "parse_json_as", "quote_data"]
