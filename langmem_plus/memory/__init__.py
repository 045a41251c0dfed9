"""LearningMemory: the one facade every surface (nodes, graph, CLI, retrievers) goes through.

It owns one namespace's Chroma collections, its lesson graph and its audit log, and
exposes the learning loop: ``capture`` failed steps, ``retrieve_pre_run`` and
``retrieve_on_error`` lessons, ``end_run`` to synthesize, measure, promote and
suppress. Reads and writes never cross namespaces.

The package, one idea per module:

* ``facade``: ``LearningMemory``, the calls of the learning loop;
* ``run``: ``Run``, one run from its first hint to its end (``memory.start_run(task)``), the loop's calls in one place;
* ``view``: ``MemoryView``, what this process holds of the namespace, and the one place it changes;
* ``sync``: ``StoreSync``, which keeps the view in step with Chroma, the local snapshot and other writers;
* ``imports`` and ``runs``: what ``add_lessons`` and ``end_run`` write beside the lessons.

Example:
    >>> import tempfile
    >>> from langmem_plus import LearningMemory, TaskSpec
    >>> mem = LearningMemory.open(tempfile.mkdtemp(), namespace=("acme", "agent-7"))
    >>> mem.retrieve_pre_run(TaskSpec(task_id="t1", goal="count rows", tool="gridtool"))
    []
"""

from langmem_plus.memory.facade import DEFAULT_PATH, SHOWN_UNCLAIMED_MAX, LearningMemory, Trajectory
from langmem_plus.memory.run import AsyncRun, Run
from langmem_plus.memory.sync import LOG_NAME

__all__ = ["DEFAULT_PATH", "LOG_NAME", "SHOWN_UNCLAIMED_MAX", "AsyncRun", "LearningMemory", "Run", "Trajectory"]
