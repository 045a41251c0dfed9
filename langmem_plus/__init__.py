"""langmem_plus: a learning memory for LangGraph and LangChain agents.

It captures failed steps as fingerprinted error events, turns recurring failures into
WRONG -> CORRECT lessons, hands the right lessons back before a run and at the moment
of an error, and keeps only the lessons that measurably help.

The package exports the entry points: a memory and its configuration, one way to record a
run (``memory.start_run(task)`` -> ``Run``), the records a run is made of, the error tree,
and the LangChain / LangGraph integrations. Everything else is imported from its module
(``langmem_plus.records``, ``langmem_plus.nodes``, ``langmem_plus.referee``, ...).

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
from langmem_plus.config import MemoryConfig
from langmem_plus.errors import (
    EnvError,
    InvalidArgument,
    InvalidNamespace,
    InvalidRecord,
    LangmemPlusError,
    ModelOutputError,
    StoreUnavailable,
)
from langmem_plus.plugins import register_plugin as _register_plugin
from langmem_plus.records import Feedback, Hint, Lesson, RunReport, Step, TaskSpec, Verdict

__version__ = "0.1.0"

# Built-in environment plugins, by path: each loads on the first task of its domain (``plugins.plugin_for``).
_register_plugin("langmem_plus.textgames.plugin:PLUGIN", domains=["text-game"], step_default=True)

_LAZY: dict[str, str] = {
    "AsyncRun": "langmem_plus.memory.run",
    "LearningMemory": "langmem_plus.memory",
    "LearningMiddleware": "langmem_plus.integrations.middleware",
    "Run": "langmem_plus.memory.run",
    "build_executor_referee_graph": "langmem_plus.graph",
    "env_tool": "langmem_plus.integrations.env_tool",
    "make_env": "langmem_plus.envs.registry",
    "run_task": "langmem_plus.graph",
}

_MOVED: dict[str, str] = {
    "Activation": "langmem_plus.records",
    "Claim": "langmem_plus.memory_types.fact_sources",
    "CognitiveMemory": "langmem_plus.memory_types",
    "DEFAULT_CONFIG": "langmem_plus.config",
    "Decision": "langmem_plus.executors.base",
    "DeterministicReferee": "langmem_plus.referee",
    "Env": "langmem_plus.envs.base",
    "Episode": "langmem_plus.records",
    "ErrorEvent": "langmem_plus.records",
    "Evidence": "langmem_plus.records",
    "Fact": "langmem_plus.records",
    "HashingEmbeddings": "langmem_plus.embeddings",
    "InstantMemory": "langmem_plus.memory_types",
    "LLMExecutor": "langmem_plus.executors.llm",
    "LLMJudge": "langmem_plus.referee",
    "LangGraphChromaStore": "langmem_plus.integrations.store",
    "LessonRetriever": "langmem_plus.retrieval.retrievers",
    "MemoryState": "langmem_plus.nodes",
    "ScoredItem": "langmem_plus.records",
    "ScriptedExecutor": "langmem_plus.executors.scripted",
    "SemanticMemory": "langmem_plus.memory_types",
    "SignalsReferee": "langmem_plus.referee",
    "Skill": "langmem_plus.records",
    "Trajectory": "langmem_plus.memory",
    "WorkingContext": "langmem_plus.records",
    "capture_node": "langmem_plus.nodes",
    "count_tokens": "langmem_plus.tokens",
    "detect_failure": "langmem_plus.capture",
    "distill_hints_node": "langmem_plus.nodes",
    "end_of_run_node": "langmem_plus.nodes",
    "extract_tags": "langmem_plus.capture",
    "facts_from_observation": "langmem_plus.memory_types.fact_sources",
    "fingerprint": "langmem_plus.capture",
    "fingerprint_id": "langmem_plus.capture",
    "make_embeddings": "langmem_plus.embeddings",
    "on_error_retrieve_node": "langmem_plus.nodes",
    "pre_run_node": "langmem_plus.nodes",
    "referee_node": "langmem_plus.nodes",
    "register_plugin": "langmem_plus.plugins",
}
"""Names the package exported before it kept to its entry points, by the module to import each from. They resolve
for one more release, each read with a ``DeprecationWarning`` naming that module (``_lazy.lazy_getattr``)."""

if TYPE_CHECKING:  # pragma: no cover
    from langmem_plus.envs.registry import make_env
    from langmem_plus.graph import build_executor_referee_graph, run_task
    from langmem_plus.integrations.env_tool import env_tool
    from langmem_plus.integrations.middleware import LearningMiddleware
    from langmem_plus.memory import LearningMemory
    from langmem_plus.memory.run import AsyncRun, Run


__getattr__ = lazy_getattr(__name__, _LAZY, _MOVED)


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "AsyncRun",
    "EnvError",
    "Feedback",
    "Hint",
    "InvalidArgument",
    "InvalidNamespace",
    "InvalidRecord",
    "LangmemPlusError",
    "LearningMemory",
    "LearningMiddleware",
    "Lesson",
    "MemoryConfig",
    "ModelOutputError",
    "Run",
    "RunReport",
    "Step",
    "StoreUnavailable",
    "TaskSpec",
    "Verdict",
    "__version__",
    "build_executor_referee_graph",
    "env_tool",
    "make_env",
    "run_task",
]
