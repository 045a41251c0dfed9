"""What a text game has told an outside agent so far, read from the chat messages alone.

Both outside executors see the game through this view: the opening observation, each command
proposed with the tool's answer to it, the latest valid actions and whether the game is over.
Memory's text is not read here (each executor has its own reader); a tool answer is kept raw,
so an executor's reader decides whether it came from the game or from memory's guard.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from langmem_plus.integrations.env_tool import GAME_OVER, VALID_ACTIONS_TITLE

TOOL_NAME = "act"
"""The name of the one tool the agent has (``env_tool``'s default)."""
WORD = re.compile(r"[a-z]+")
"""A word, as both executors compare texts: a run of lowercase letters."""
SEED_BYTES = 8
"""How many bytes of a SHA-256 digest seed a decision's random draw."""


def words(text: str) -> set[str]:
    """The set of lowercase words in ``text`` (the unit of every overlap score)."""
    return set(WORD.findall(text.lower()))


def split_valid(text: str) -> tuple[str, list[str] | None]:
    """Split a game text into what precedes the ``Valid actions:`` line and the actions it lists (None if absent)."""
    at = text.rfind(VALID_ACTIONS_TITLE)
    if at < 0:
        return text, None
    rest = text[at + len(VALID_ACTIONS_TITLE):].strip()
    listed = rest.splitlines()[0] if rest else ""
    return text[:at].rstrip(), [a.strip() for a in listed.split(",") if a.strip()]


def content_text(message: BaseMessage) -> str:
    """A message's content as one string (list contents joined)."""
    content = message.content
    if isinstance(content, str):
        return content
    return "\n".join(part if isinstance(part, str) else str(part.get("text", "")) for part in content)


@dataclass
class Exchange:
    """One command the model proposed and the tool message answering it (raw text, valid-actions line removed)."""

    command: str
    answer: str
    valid: list[str] | None


@dataclass
class GameView:
    """Everything an executor may decide from: built anew from the messages at each call."""

    opening: str
    valid: list[str]
    exchanges: list[Exchange] = field(default_factory=list)
    system: list[str] = field(default_factory=list)
    over: bool = False
    calls: int = 0

    @property
    def goal(self) -> str:
        """The goal line of the opening observation (or the whole opening when it has none)."""
        found = re.search(r"^Goal:\s*(.+)$", self.opening, flags=re.MULTILINE)
        return found.group(1) if found else self.opening

    def texts(self) -> list[str]:
        """The opening and every tool answer, in order."""
        return [self.opening, *(e.answer for e in self.exchanges)]

    def rng(self, seed: int) -> random.Random:
        """A random source fixed by the seed, the game (its opening) and the decision's index: deterministic per call."""
        digest = hashlib.sha256(f"{seed}|{self.opening}|{self.calls}".encode()).digest()
        return random.Random(int.from_bytes(digest[:SEED_BYTES], "big"))


def read_game(messages: Sequence[BaseMessage]) -> GameView:
    """Rebuild the game so far from a chat: first human message, the act calls and their tool messages, system text."""
    opening, valid = "", []
    system: list[str] = []
    proposed: dict[str, str] = {}
    exchanges: list[Exchange] = []
    over = False
    calls = 0
    for message in messages:
        if isinstance(message, SystemMessage):
            system.append(content_text(message))
        elif isinstance(message, HumanMessage) and not opening:
            opening, first = split_valid(content_text(message))
            valid = first or []
        elif isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call.get("name") == TOOL_NAME:
                    calls += 1
                    proposed[str(call.get("id"))] = str(call.get("args", {}).get("command", ""))
        elif isinstance(message, ToolMessage):
            text = content_text(message)
            if GAME_OVER in text:
                over = True
            body, listed = split_valid(text)
            exchanges.append(Exchange(proposed.get(str(message.tool_call_id), ""), body, listed))
            if listed:
                valid = listed
    return GameView(opening=opening, valid=valid, exchanges=exchanges, system=system, over=over, calls=calls)
