"""langmem_plus: a learning memory for LangGraph and LangChain agents.

It captures failed steps as fingerprinted error events, turns recurring failures into
WRONG -> CORRECT lessons, hands the right lessons back before a run and at the moment
of an error, and keeps only the lessons that measurably help.

Heavy dependencies (chromadb, langgraph) load on first use of the names that need
them, so ``import langmem_plus`` stays fast.

Example:
    >>> import tempfile
    >>> from langmem_plus import LearningMemory
    >>> mem = LearningMemory.open(tempfile.mkdtemp(), namespace=("acme", "agent-7"))
    >>> mem.lessons_by_status()["candidate"]
    0
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langmem_plus._lazy import lazy_getattr
from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.plugins import register_plugin
from langmem_plus.errors import (
    EnvError,
    InvalidArgument,
    InvalidNamespace,
    InvalidRecord,
    LangmemPlusError,
    ModelOutputError,
    StoreUnavailable,
)
from langmem_plus.records import (
    Activation,
    Episode,
    ErrorEvent,
    Evidence,
    Fact,
    Feedback,
    Hint,
    Lesson,
    RunReport,
    ScoredItem,
    Skill,
    Step,
    TaskSpec,
    Verdict,
    WorkingContext,
)

__version__ = "0.1.0"

# Built-in environment plugins, by path: each loads on the first task of its domain (``plugins.plugin_for``).
register_plugin("langmem_plus.textgames.plugin:PLUGIN", domains=["text-game"], step_default=True)

_LAZY: dict[str, str] = {
    "LearningMemory": "langmem_plus.memory",
    "Trajectory": "langmem_plus.memory",
    "MemoryState": "langmem_plus.nodes",
    "pre_run_node": "langmem_plus.nodes",
    "capture_node": "langmem_plus.nodes",
    "on_error_retrieve_node": "langmem_plus.nodes",
    "distill_hints_node": "langmem_plus.nodes",
    "referee_node": "langmem_plus.nodes",
    "end_of_run_node": "langmem_plus.nodes",
    "build_executor_referee_graph": "langmem_plus.graph",
    "run_task": "langmem_plus.graph",
    "HashingEmbeddings": "langmem_plus.embeddings",
    "make_embeddings": "langmem_plus.embeddings",
    "count_tokens": "langmem_plus.tokens",
    "fingerprint": "langmem_plus.capture",
    "fingerprint_id": "langmem_plus.capture",
    "extract_tags": "langmem_plus.capture",
    "detect_failure": "langmem_plus.capture",
    "DeterministicReferee": "langmem_plus.referee",
    "LLMJudge": "langmem_plus.referee",
    "SignalsReferee": "langmem_plus.referee",
    "ScriptedExecutor": "langmem_plus.executors.scripted",
    "LLMExecutor": "langmem_plus.executors.llm",
    "Decision": "langmem_plus.executors.base",
    "Env": "langmem_plus.envs.base",
    "make_env": "langmem_plus.envs.registry",
    "LessonRetriever": "langmem_plus.retrieval.retrievers",
    "LangGraphChromaStore": "langmem_plus.integrations.store",
    "LearningMiddleware": "langmem_plus.integrations.middleware",
    "env_tool": "langmem_plus.integrations.env_tool",
    "CognitiveMemory": "langmem_plus.memory_types.cognitive",
    "SemanticMemory": "langmem_plus.memory_types.semantic",
    "Claim": "langmem_plus.memory_types.fact_sources",
    "facts_from_observation": "langmem_plus.memory_types.fact_sources",
    "InstantMemory": "langmem_plus.memory_types.instant",
}

if TYPE_CHECKING:  # pragma: no cover
    from langmem_plus.capture import detect_failure, extract_tags, fingerprint, fingerprint_id
    from langmem_plus.embeddings import HashingEmbeddings, make_embeddings
    from langmem_plus.envs.base import Env
    from langmem_plus.envs.registry import make_env
    from langmem_plus.executors.base import Decision
    from langmem_plus.executors.llm import LLMExecutor
    from langmem_plus.executors.scripted import ScriptedExecutor
    from langmem_plus.graph import build_executor_referee_graph, run_task
    from langmem_plus.integrations.env_tool import env_tool
    from langmem_plus.integrations.middleware import LearningMiddleware
    from langmem_plus.integrations.store import LangGraphChromaStore
    from langmem_plus.memory import LearningMemory, Trajectory
    from langmem_plus.memory_types.cognitive import CognitiveMemory
    from langmem_plus.memory_types.fact_sources import Claim, facts_from_observation
    from langmem_plus.memory_types.semantic import SemanticMemory
    from langmem_plus.memory_types.instant import InstantMemory
    from langmem_plus.nodes import (
        MemoryState,
        capture_node,
        distill_hints_node,
        end_of_run_node,
        on_error_retrieve_node,
        pre_run_node,
        referee_node,
    )
    from langmem_plus.referee import DeterministicReferee, LLMJudge, SignalsReferee
    from langmem_plus.retrieval.retrievers import LessonRetriever
    from langmem_plus.tokens import count_tokens


__getattr__ = lazy_getattr(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "Activation",
    "Claim",
    "CognitiveMemory",
    "DEFAULT_CONFIG",
    "Decision",
    "DeterministicReferee",
    "Env",
    "EnvError",
    "Episode",
    "ErrorEvent",
    "Evidence",
    "Fact",
    "Feedback",
    "HashingEmbeddings",
    "Hint",
    "InstantMemory",
    "InvalidArgument",
    "InvalidNamespace",
    "InvalidRecord",
    "LLMExecutor",
    "LLMJudge",
    "LangGraphChromaStore",
    "LangmemPlusError",
    "LearningMemory",
    "LearningMiddleware",
    "Lesson",
    "LessonRetriever",
    "MemoryConfig",
    "MemoryState",
    "ModelOutputError",
    "RunReport",
    "ScoredItem",
    "ScriptedExecutor",
    "SemanticMemory",
    "SignalsReferee",
    "Skill",
    "Step",
    "StoreUnavailable",
    "TaskSpec",
    "Trajectory",
    "Verdict",
    "WorkingContext",
    "__version__",
    "build_executor_referee_graph",
    "capture_node",
    "count_tokens",
    "detect_failure",
    "distill_hints_node",
    "end_of_run_node",
    "env_tool",
    "extract_tags",
    "facts_from_observation",
    "fingerprint",
    "fingerprint_id",
    "make_embeddings",
    "make_env",
    "on_error_retrieve_node",
    "pre_run_node",
    "referee_node",
    "run_task",
]
