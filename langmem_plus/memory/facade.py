"""``LearningMemory``: the calls of the learning loop over one namespace (see the ``memory`` package)."""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
import uuid
from collections import ChainMap, Counter
from pathlib import Path
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from langmem_plus._gc import gc_paused
from langmem_plus.capture import detect_failure
from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.embeddings import make_embeddings
from langmem_plus.errors import InvalidArgument, InvalidRecord
from langmem_plus.learning.corrections import corrections, retired_by
from langmem_plus.learning.episodes import episodes_from_run, link_evidence
from langmem_plus.learning.hints import hints_from_items
from langmem_plus.learning.incremental import StoreLookup
from langmem_plus.learning.lifecycle import (
    Judgement,
    additions,
    apply_conflict_losses,
    integrate_candidates,
    judge_activated,
    restorations,
    restore_transition,
    run_outcome,
    sweep_unused,
)
from langmem_plus.learning.llm_synthesis import synthesize_with_llm
from langmem_plus.learning.outcomes import applied_in_run, step_outcomes
from langmem_plus.learning.procedures import group_by_kind, is_workflow, learned_part, matching, workflow_of, workflow_skill
from langmem_plus.learning.trajectory_import import demonstration
from langmem_plus.learning.workflows import Grounded, against, ground, workflow_line
from langmem_plus.learning.recall import Direction, recall_at, recall_before, recall_sequence
from langmem_plus.learning.synthesis import synthesize_offline
from langmem_plus.memory.by_hand import by_hand, by_hand_async, unwarned
from langmem_plus.memory.facts import SharedFacts
from langmem_plus.memory.imports import link_imported, with_simhash
from langmem_plus.memory.runs import audit_run, write_episodes
from langmem_plus.memory.run import AsyncRun, Run
from langmem_plus.memory.sync import StoreSync
from langmem_plus.memory.view import MemoryView
from langmem_plus.plugins import LearnInput, plugin_for
from langmem_plus.retrieval.context import assemble, habit_relevance
from langmem_plus.records import (
    Activation,
    Episode,
    ErrorEvent,
    Hint,
    Lesson,
    Moment,
    Namespace,
    RunEvidence,
    RunRecord,
    RunReport,
    ScoredItem,
    Skill,
    SkillEvidence,
    Step,
    TaskSpec,
    Verdict,
    WorkingContext,
    validate_namespace,
)
from langmem_plus.retrieval.call_guard import Held, check_call
from langmem_plus.retrieval.engine import Retrieval, RetrievalEngine
from langmem_plus.retrieval.tool_scope import likely_tools, tool_scores, words
from langmem_plus.store.audit import AuditLog, Later, audit_path
from langmem_plus.store.chroma import ChromaStore
from langmem_plus.store.graph import LessonGraph
from langmem_plus.store.snapshot import RecordTable, SnapshotDir, snapshot_dir

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

    from langmem_plus.integrations.middleware import LearningMiddleware
    from langmem_plus.integrations.store import LangGraphChromaStore
    from langmem_plus.memory_types.cognitive import CognitiveMemory
    from langmem_plus.memory_types.semantic import FactHit, SemanticMemory
    from langmem_plus.referee import Referee
    from langmem_plus.retrieval.retrievers import LessonRetriever

logger = logging.getLogger(__name__)

DEFAULT_PATH = ".langmem_plus"
"""Where the embedded store lives when no path is given."""
SHOWN_UNCLAIMED_MAX = 1000
"""Run ids whose ``general_retrieve`` activations wait for a ``general_update``; the oldest are dropped beyond this."""



class Trajectory(BaseModel):
    """One finished task attempt, the recorder of the two-interface memory abstraction."""

    task: TaskSpec
    steps: list[Step] = Field(default_factory=list)
    verdict: Verdict | None = None
    run_id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    guarded: list[str] = Field(default_factory=list)
    """Proposals memory answered after which the agent ended the attempt instead of taking a step (a step records
    its own in ``info["guarded"]``)."""




def _first_steps(activations: Sequence[Activation]) -> dict[str, int]:
    """The step at which each lesson was first shown in a run."""
    first: dict[str, int] = {}
    for a in activations:
        first[a.lesson_id] = min(a.step, first.get(a.lesson_id, a.step))
    return first


def _candidate_rows(candidates: Sequence[ScoredItem]) -> list[dict[str, Any]]:
    """A retrieval's audit record of its candidates (id, score to 4 places, components); built on the audit
    writer's thread (``audit.Later``): the retrieval hands over its items, which nothing changes afterwards."""
    return [{"id": c.item_id, "score": round(c.score, 4), "components": dict(c.components)} for c in candidates]


class LearningMemory:
    """A namespace's learning memory. Open it with ``LearningMemory.open``.

    The facade: the learning loop's calls, each taking the memory's lock while it reads
    or changes the view (``memory.view``), which ``memory.sync`` keeps in step with
    Chroma, the local snapshot and the other writers of the namespace.
    """

    def __init__(
        self,
        *,
        store: ChromaStore,
        audit: AuditLog,
        namespace: Namespace,
        config: MemoryConfig = DEFAULT_CONFIG,
        llm: BaseChatModel | None = None,
        clock: Callable[[], float] = time.time,
        snapshot: SnapshotDir | None = None,
    ) -> None:
        self.store, self.audit, self.namespace, self.config, self.llm = store, audit, namespace, config, llm
        self.clock = clock
        self._lock = threading.RLock()
        self.view = MemoryView(store, namespace, config)
        """What this process holds of the namespace: lessons, links, skills, runs, graph, index, ledger."""
        self.sync = StoreSync(store, self.view, snapshot=snapshot, lock=self._lock, clock=clock)
        """Writes, the snapshot and the other writers (``memory.sync``)."""
        from_snapshot = self.sync.open_view()
        self.vectors = self.view.vectors
        self.engine = RetrievalEngine(
            store=store, graph=self.view.graph, lessons=self.view.lessons, vectors=self.vectors, config=config
        )
        if not from_snapshot and snapshot is not None:
            self.sync.write_base()
        self._warm_stop = threading.Event()
        self._warmer: threading.Thread | None = None
        lessons = self.view.lessons
        if from_snapshot and config.storage.warm_lessons and (lessons.parsed_count() < len(lessons) or len(self.view.episodes)):
            self._warmer = threading.Thread(target=self._warm, name="langmem-plus-warm", daemon=True)
            self._warmer.start()
        self._pending_losses: dict[str, Counter[str]] = {}
        """Run id -> conflict-cluster losses at its retrievals, consumed by that run's ``end_run``; ad-hoc
        retrievals (no run id: the retriever, the tool) count for no run."""
        self._shown: dict[str, list[Activation]] = {}
        """Activations ``general_retrieve`` showed, by run id, until ``general_update`` takes them."""
        self.last_retrieval: Retrieval | None = None
        """The full result of the latest retrieval (candidates, drops, tokens), for inspection."""
        self._semantic: SemanticMemory | None = None
        self.engine.facts = self._fact_items
        self.engine.sources.episode_view = self.view.episode

    @property
    def lessons(self) -> RecordTable[Lesson]:
        """Lessons by id, each the fold of its run evidence over its stored record."""
        return self.view.lessons

    @property
    def graph(self) -> LessonGraph:
        """The lesson graph (``store.graph``)."""
        return self.view.graph

    @property
    def skills(self) -> RecordTable[Skill]:
        """Skills by id, each the fold of its runs' outcomes over its stored record."""
        return self.view.skills

    @property
    def runs(self) -> list[RunRecord]:
        """The stored runs in Lamport order."""
        return self.view.runs

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(
        cls,
        path: str | Path | None = None,
        *,
        url: str | None = None,
        namespace: Iterable[str] | str = ("default",),
        config: MemoryConfig | None = None,
        embeddings: Embeddings | str | None = None,
        llm: BaseChatModel | None = None,
        audit_dir: str | Path | None = None,
        clock: Callable[[], float] = time.time,
    ) -> "LearningMemory":
        """Open (or create) a memory: embedded Chroma at ``path``, or a Chroma server at ``url``.

        Args:
            path: Folder of the embedded store (default ``./.langmem_plus``). Ignored with ``url``.
            url: A Chroma server, e.g. ``http://127.0.0.1:8000`` (started with ``chroma run``).
            namespace: Tuple of strings, e.g. ``("acme", "agent-7")``; every read stays inside it.
            config: Tunable numbers; the defaults (design.md §9) when omitted.
            embeddings: A LangChain Embeddings, ``"hashing"`` (offline default) or ``"openai:<model>"``.
            llm: Optional chat model for lesson synthesis and hint distillation.
            audit_dir: Where the JSONL audit log lives (default: the store folder).
            clock: Source of "now" in epoch seconds; pass a logical clock for reproducible runs.

        Raises:
            InvalidNamespace: the namespace is empty or malformed.
            StoreUnavailable: the path or server cannot be used.
        """
        ns = validate_namespace(namespace)
        cfg = config or DEFAULT_CONFIG
        emb = make_embeddings(embeddings, dim=cfg.storage.embedding_dim)
        root = Path(path) if path is not None else Path(DEFAULT_PATH)
        with gc_paused():
            store = ChromaStore.open(path=None if url else root, url=url, namespace=ns, embeddings=emb, config=cfg)
            local = Path(audit_dir) if audit_dir else root
            audit = AuditLog(audit_path(local, ns), ns, clock=clock)
            snapshot = SnapshotDir(
                snapshot_dir(local, ns), segment_live_min=cfg.storage.snapshot_segment_live_min, segments_max=cfg.storage.snapshot_segments_max
            ) if cfg.storage.snapshot else None
            try:
                return cls(store=store, audit=audit, namespace=ns, config=cfg, llm=llm, clock=clock, snapshot=snapshot)
            except BaseException:
                store.close()
                raise

    def _warm(self) -> None:
        """After an open from a snapshot, off the lock: parse the lessons (``RecordTable.warm``), then build the episode
        index, so neither the first retrieval nor the first ``end_run`` pays for them; the index is installed only if no
        episode, sighting or run arrived while it was built (``MemoryView.offer_episode_index``)."""
        stop = self._warm_stop
        self.view.lessons.warm(stop)
        if stop.is_set() or self.view.episode_index is not None or not len(self.view.episodes):
            return
        version = self.view.episodes_version
        try:
            index = self.view.build_episode_index(stop)
        except RuntimeError:  # the table changed size while it was listed: the first end_run builds the index
            return
        if index is not None:
            with self._lock:
                self.view.offer_episode_index(index, version)

    def wait_warm(self, timeout: float | None = None) -> bool:
        """Wait until the background work after an open (``warm_lessons``: the parse, the episode index) is done; True when it is."""
        if self._warmer is not None:
            self._warmer.join(timeout)
            return not self._warmer.is_alive()
        return True

    def close(self) -> None:
        """Fold a long snapshot journal into a new base (``snapshot_rebase_share``), then release the store client."""
        self._warm_stop.set()
        self.wait_warm(timeout=5.0)
        self.sync.rebase_if_long(self.config.storage.snapshot_rebase_share)
        self.engine.close()  # the retrieval worker thread, before the client it calls
        self.audit.close()  # writes the deferred retrieval records
        self.store.close()

    def __enter__(self) -> "LearningMemory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def refresh(self) -> int:
        """Read what other writers appended since the last look: their records and run evidence; the entries read.

        Runs at every ``end_run``, at a run's start (``shared_refresh_s``), and on demand.

        Raises:
            StoreUnavailable: Chroma cannot be read.
        """
        return self.sync.refresh()

    # ------------------------------------------------------------------ a run
    def start_run(self, task: TaskSpec, *, run_id: str | None = None, step_advice: bool = True) -> Run:
        """A run of ``task`` with this memory (``memory.run.Run``): ``hints()``, ``record(step)``, ``check(action)``,
        ``end(verdict)``; usable as a context manager, which ends a run left open. ``run_id``: unique per attempt
        (default: the task id and a random suffix); ``step_advice``: the advice at each step of a domain that gives
        it (a text game's), on by default."""
        return Run(self, task, run_id=run_id, step_advice=step_advice)

    def astart_run(self, task: TaskSpec, *, run_id: str | None = None, step_advice: bool = True) -> AsyncRun:
        """``start_run`` for ``async`` code: ``async with memory.astart_run(task) as run: await run.hints()``."""
        return AsyncRun(self.start_run(task, run_id=run_id, step_advice=step_advice))

    # ------------------------------------------------------------------ capture
    @by_hand
    def capture(
        self,
        step: Step,
        *,
        run_id: str,
        task: TaskSpec | None = None,
        history: Sequence[Step] = (),
        now: float | None = None,
    ) -> ErrorEvent | None:
        """Fingerprint a failed step into an ErrorEvent and store it; None when the step is fine (``Run.record``).

        Recording a run by hand with this call is kept for one release (it warns); use ``start_run``.
        """
        event = detect_failure(
            step,
            history,
            namespace=self.namespace,
            run_id=run_id,
            task=task,
            config=self.config,
            now=self.clock() if now is None else now,
        )
        if event is None:
            return None
        with self._lock:
            self.store.upsert("events", [event])
            self.audit.write("capture", event=event.model_dump(mode="json"))
        return event

    @by_hand
    def capture_steps(
        self, steps: Sequence[Step], *, run_id: str, task: TaskSpec | None = None, start: int = 0
    ) -> list[ErrorEvent]:
        """``capture`` each of ``steps[start:]`` with the steps before it as history; the events found (the
        ``capture`` node, ``general_update``).

        Recording a run by hand with this call is kept for one release (it warns); use ``start_run``.
        """
        events: list[ErrorEvent] = []
        for i in range(start, len(steps)):
            event = self.capture(steps[i], run_id=run_id, task=task, history=steps[:i])
            if event is not None:
                events.append(event)
        return events

    # ------------------------------------------------------------------ retrieval
    @by_hand
    def retrieve_pre_run(
        self,
        task: TaskSpec,
        context: WorkingContext | None = None,
        *,
        run_id: str | None = None,
        now: float | None = None,
        k: int | None = None,
    ) -> list[ScoredItem]:
        """Lessons worth knowing before a task starts (design.md §5, pre-run moment).

        ``k`` replaces the difficulty budget K' (and the tool sheet): at most ``k`` items,
        exactly ``k`` when that many pass the guards and the token cap (a retriever's ``k``).
        The items come back in the order of the hint block instant memory assembled from
        them (``retrieval.context``): lessons ranked by how often the tool's recent runs
        needed them, within ``max_context_tokens``. ``Run.hints`` calls it on a run's first hints.

        Recording a run by hand with this call is kept for one release (it warns); use ``start_run``.
        """
        with self._lock:  # the state it reads changes under end_run and refresh (one writer at a time, readers wait)
            if run_id is not None and self.clock() - self.sync.refreshed_at >= self.config.lifecycle.shared_refresh_s:
                self.sync.refresh()  # a run starts: see what other writers learned
            result = self._pre_run(task, context, now=now, k=k)
        return self._after_retrieval("pre_run", result, run_id=run_id)

    def _pre_run(self, task: TaskSpec, context: WorkingContext | None, *, now: float | None, k: int | None) -> Retrieval:
        """``retrieve_pre_run``'s retrieval, before it is recorded."""
        now = self.clock() if now is None else now
        context_runs = self._context_runs(task)
        fps = {fp for r in context_runs for fp in r.fingerprint_counts}
        actions = list(dict.fromkeys(f.action for r in context_runs for f in r.failures if f.action))
        known = {i for r in context_runs for i in r.applied}
        tags = {t for fp in fps for l in self.view.lessons_for_fp(fp) for t in l.tags}
        ctx = context or WorkingContext(goal=task.goal, context=task.tool or task.domain or "")
        if ctx.difficulty is None:
            ctx = ctx.model_copy(update={"difficulty": self._pre_run_difficulty(task, context_runs, known)})
        runs = [r for r in self.runs if r.tool == task.tool][-self.config.context.instant_habit_runs :]
        return self.engine.pre_run(
            task,
            ctx,
            recent_fingerprints=fps,
            recent_tags=tags,
            recent_actions=actions,
            known_lessons=known,
            now=now,
            limit=k,
            relevance=habit_relevance(runs, self.config, task_runs=context_runs),
        )

    def tool_scores(self, goal: str, tools: Mapping[str, str | None]) -> dict[str, float]:
        """How likely a task with ``goal`` is to call each of ``tools`` (name -> description), from the words of the
        descriptions and of the goals of past runs that called each tool (``retrieval.tool_scope``)."""
        with self._lock:
            runs = [r for r in self.view.runs if r.goal and r.tools][-self.config.retrieval.tool_scope_runs:]
        docs = {t: words(f"{t} {desc or ''}") for t, desc in tools.items()}
        return tool_scores(words(goal), docs, [(words(r.goal), r.tools) for r in runs])

    def retrieve_for_tools(
        self, task: TaskSpec, tools: Mapping[str, str | None], *, run_id: str | None = None
    ) -> list[ScoredItem]:
        """``retrieve_pre_run`` for an agent with several tools: for each tool the task is likely to call
        (``tool_scores`` at least ``tool_scope_min_score`` and ``tool_scope_ratio`` of the likeliest's, at most
        ``tool_scope_max_tools``, likeliest first), the lessons of that tool, and its skills and facts; not episodes
        (an episode's calls answered another task, with its literals). A task that makes no tool likely gets none."""
        cfg = self.config
        scores = self.tool_scores(task.goal, tools)
        items: dict[str, ScoredItem] = {}
        for tool in likely_tools(scores, min_score=cfg.retrieval.tool_scope_min_score, max_tools=cfg.retrieval.tool_scope_max_tools,
                                 ratio=cfg.retrieval.tool_scope_ratio):
            for item in self.retrieve_pre_run(task.model_copy(update={"tool": tool}), run_id=run_id):
                if item.kind != "episode":  # a past call for another question, literally: its lessons carry what transfers
                    items.setdefault(item.item_id, item)
        return list(items.values())

    @by_hand
    def retrieve_on_error(
        self,
        event: ErrorEvent,
        context: WorkingContext | None = None,
        *,
        run_id: str | None = None,
        now: float | None = None,
        k: int | None = None,
    ) -> list[ScoredItem]:
        """Lessons for the failure that just happened: exact fingerprint first (design.md §5).

        ``k``: as in ``retrieve_pre_run``. ``Run.record`` calls it for a failed step.

        Recording a run by hand with this call is kept for one release (it warns); use ``start_run``.
        """
        now = self.clock() if now is None else now
        ctx = context or WorkingContext(last_fail=event.error_text[: self.config.capture.context_text_chars], context=event.tool or "")
        with self._lock:  # see retrieve_pre_run
            result = self.engine.on_error(event, ctx, now=now, limit=k)
        return self._after_retrieval("on_error", result, run_id=run_id or event.run_id)

    def _after_retrieval(self, moment: Moment, result: Retrieval, *, run_id: str | None) -> list[ScoredItem]:
        with self._lock:
            self.last_retrieval = result
            if run_id is not None and result.conflict_losers:
                self._pending_losses.setdefault(run_id, Counter()).update(result.conflict_losers)
                while len(self._pending_losses) > SHOWN_UNCLAIMED_MAX:  # runs that never ended: oldest first
                    self._pending_losses.pop(next(iter(self._pending_losses)))
            # Encoded and appended off the query thread; ``audit.read`` (``history``) flushes first.
            self.audit.write_deferred(
                "retrieval",
                moment=moment,
                run_id=run_id,
                query=result.query[: self.config.capture.query_error_chars],
                difficulty=result.difficulty,
                budget=result.budget,
                candidates=Later(_candidate_rows, result.candidates[: self.config.retrieval.candidates_k]),
                chosen=[c.item_id for c in result.chosen],
                dropped=list(result.dropped),
                tokens=result.tokens,
                tokens_exact=result.tokens_exact,
            )
        return result.chosen

    @by_hand
    def activations_for(
        self, items: Sequence[ScoredItem], *, run_id: str, step: int, moment: Moment, fingerprint_id: str | None = None
    ) -> list[Activation]:
        """Activation records for the lessons among ``items`` that are shown to the executor (a ``Run`` records them
        as it shows lessons).

        Recording a run by hand with this call is kept for one release (it warns); use ``start_run``.
        """
        return [
            Activation(
                lesson_id=i.item_id, run_id=run_id, step=step, moment=moment, fingerprint_id=fingerprint_id, score=i.score
            )
            for i in items
            if i.kind == "lesson"
        ]

    # ------------------------------------------------------------------ workflows
    def learn_from_trajectories(
        self, trajectories: Iterable[Any], *, goal: str | None = None, family: str | None = None, source: str = ""
    ) -> list[Skill]:
        """Induce workflows (procedures with slots) from successful or partly successful trajectories; the workflow
        skills written, each joined with what it already held of its kind (design.md §6 "Workflows").

        A trajectory is a ``workflows.Demonstration``, a LangChain message list (a ``create_agent`` run's
        ``messages``), recorded ``Step``s, plain steps (actions, ``(action, observation, score)`` tuples or
        mappings), or ``{"goal": ..., "steps": [...]}`` (``learning.trajectory_import``). ``goal`` is the goal of
        trajectories that do not carry one; ``family`` names their kind of task (otherwise goals that overlap are
        one kind, ``workflow_min_goal_overlap``).

        Raises:
            InvalidArgument: a trajectory of an unknown shape, or without a goal.
        """
        demos = [d for d in (demonstration(t, goal=goal, source=source) for t in trajectories) if d.steps]
        cfg = self.config.workflows
        now = self.clock()
        with self._lock:
            groups = group_by_kind(demos, list(self.view.skills.values()), family=family, config=cfg)
            written = [self.view.skill_record(workflow_skill(more, self.namespace, family=family, existing=held,
                                                             config=cfg, now=now)) for held, more in groups]
            if written:
                self.sync.write("skills", written)
                for skill in written:
                    self.audit.write("workflow", skill_id=skill.id, version=skill.version, sources=len(skill.sources),
                                     steps=[s.action for s in skill.procedure][:50])
        return written

    def workflows_for(self, goal: str, *, family: str | None = None) -> list[Skill]:
        """The workflow skills that fit ``goal`` (their goal's slots bind), not suppressed, best first."""
        return matching(goal, list(self.view.skills.values()), family=family, config=self.config.workflows)

    def workflow_step(
        self, goal: str, done: Sequence[str], offered: Sequence[str], *, family: str | None = None, seen: str = ""
    ) -> Hint | None:
        """The next step of the best workflow for ``goal`` after the actions ``done``, grounded on the ``offered``
        actions (slots bound, also from ``seen``, what the attempt was told; a step that cannot be taken skipped or
        first brought within reach), as a hint whose ``source_id`` is the workflow's and whose ``correct`` is the
        action; None when no workflow fits or none carries the attempt on."""
        for skill in self.workflows_for(goal, family=family):
            wf = workflow_of(skill)
            grounded: Grounded | None = ground(wf, goal, done, offered, self.config.workflows, seen)
            if grounded is not None:
                return Hint(text=workflow_line(grounded, wf), source_kind="skill", source_id=skill.id,
                            correct=grounded.action)
        return None

    def workflow_check(self, goal: str, action: str, *, family: str | None = None) -> list[Hint]:
        """What the workflows for ``goal`` hold against a proposed ``action``: an avoidance when it is one of their
        scoring steps on another thing than the task's text names, a step their trajectories took only on what their
        own tasks named (``workflows.against``); empty otherwise, and for an action it could not quote whole (a
        back-quote in it)."""
        if "`" in action:
            return []
        for skill in self.workflows_for(goal, family=family):
            step = against(workflow_of(skill), goal, action, self.config.workflows.workflow_min_goal_overlap)
            if step is not None:
                text = f"Avoid `{action}` (the task names what this step acts on: `{step}`, a step of a procedure)"
                return [Hint(text=text, source_kind="skill", source_id=skill.id)]
        return []

    def check_call(self, tool: str, args: Mapping[str, Any]) -> list[Held]:
        """What memory holds against a proposed call of ``tool`` with ``args``, before it runs (the call guard):
        each lesson of the tool whose WRONG form matches inside an argument, with the argument rewritten when the
        lesson is a rewrite; promoted lessons first. Suppressed lessons never hold. Empty when nothing does."""
        with self._lock:
            return check_call(self.view.tool_forms(tool), self.view.lessons.get, args)

    @staticmethod
    def hints(items: Sequence[ScoredItem]) -> list[Hint]:
        """Rule-based hints (one actionable step each) from retrieved items."""
        return hints_from_items(items)

    # ------------------------------------------------------------------ end of run
    @by_hand
    def end_run(
        self,
        *,
        run_id: str,
        task: TaskSpec,
        steps: Sequence[Step],
        events: Sequence[ErrorEvent],
        activations: Sequence[Activation] = (),
        verdict: Verdict | None = None,
        now: float | None = None,
    ) -> RunReport:
        """Synthesize lessons from the run's failures, measure activated lessons, apply the lifecycle.

        First reads what other writers appended (``refresh``), so the run's sequence
        number follows every run known (a Lamport clock) and its judgement sees their
        evidence. What the run says about each lesson is appended to the shared log as
        ``RunEvidence``, never written into the lesson's record. ``Run.end`` calls it.

        Recording a run by hand with this call is kept for one release (it warns); use ``start_run``.
        """
        now = self.clock() if now is None else now
        with self._lock:
            self.sync.refresh()
            outcome = run_outcome(steps, events, verdict, self.config)
            plugin = plugin_for(task)
            claimed = plugin if plugin is not None and plugin.claims(steps) else None
            seq = self.view.last_seq + 1
            activated = Counter(a.lesson_id for a in activations)
            run = RunRecord(
                run_id=run_id,
                namespace=self.namespace,
                seq=seq,
                task_id=task.task_id,
                family=task.family,
                tool=task.tool,
                domain=task.domain,
                passed=outcome.passed,
                score=outcome.score,
                steps=outcome.steps,
                tool_errors=outcome.tool_errors,
                fingerprint_counts=outcome.fingerprint_counts,
                failures=outcome.failures,
                activated=sorted(activated),
                applied=outcome.applied,
                extras={plugin.name: plugin.run_extras(task, steps)} if plugin is not None else {},
                goal=(task.goal or "")[: self.config.lifecycle.run_goal_chars],
                tools=list(dict.fromkeys(s.tool for s in steps if s.tool and s.info.get("kind") != "docs")),
                ts=now,
            )
            # 1. New candidate lessons from recurring failures, deduped and conflict-linked.
            # A run a plugin claims teaches through it: its failures are wrong choices, not calls to rewrite.
            candidates = [] if claimed else self._synthesize(run_id=run_id, task=task, steps=steps, events=events, now=now)
            candidates = [c.model_copy(update={"stats": c.stats.model_copy(update={"created_run_seq": seq})}) for c in candidates]
            lookup = self._lookup()
            integ = integrate_candidates(candidates, self.lessons, self.config, now=now, lookup=lookup)
            # 2. Utility of what was shown, then promotion / suppression / archive.
            judged = judge_activated(
                lessons=ChainMap(integ.upserts, self.lessons),
                activations=activated,
                first_steps=_first_steps(activations),
                run=run,
                prior_runs=self.runs,
                task=task,
                # A referee's score reaches utility as its gain over comparable runs (design.md §6); runtime signals
                # alone are no judgement. What followed from each lesson's calls is its outcome.
                referee_score=verdict.score if verdict is not None and verdict.source != "signals" else None,
                outcomes=step_outcomes(steps, verdict, progress=self.config.lifecycle.outcome_from_progress),
                applied=applied_in_run(steps),
                config=self.config,
                now=now,
            )
            # Writes to the pool land in its first map: the lessons changed this run.
            pool = ChainMap({**integ.upserts, **judged.updated}, self.lessons)
            apply_conflict_losses(
                pool, dict(self._pending_losses.pop(run_id, Counter())), run_id=run_id, run_seq=seq, config=self.config,
                out=judged, now=now,
            )
            sweep_unused(
                pool if lookup is not None else dict(pool), run_seq=seq, skip=set(activated), config=self.config,
                out=judged, only=self._sweep_ids(seq, [*integ.upserts, *judged.updated]) if lookup is not None else None,
                run_id=run_id, now=now,
            )
            for lesson_id in restorations(integ.merged, self.lessons, passed=outcome.passed):
                judged.add_evidence(RunEvidence(lesson_id=lesson_id, run_id=run_id, run_seq=seq, at=now, restored=True))
                judged.transitions.append(restore_transition(self.lessons[lesson_id], run_id))  # the fold restores it
            for lesson_id, lesson in integ.upserts.items():  # a merge's or a new rival's set members are evidence too
                before = self.lessons.get(lesson_id)
                added = additions(before, lesson) if before is not None else None
                if added is not None:
                    judged.add_evidence(RunEvidence(lesson_id=lesson_id, run_id=run_id, run_seq=seq, at=now, added=added))
            content = dict(integ.upserts)  # what changed in the records; judged changes are evidence
            if claimed is not None:
                name = claimed.name
                content.update(claimed.learn(LearnInput(
                    namespace=self.namespace, run_id=run_id, task=task, steps=steps,
                    existing=ChainMap(judged.updated, content, self.lessons), config=self.config, now=now,
                    tool_extras=lambda key: self.view.tool_extras(task.tool, name, key),
                    tool_rules=self.view.tool_text_rules(task.tool, [judged.updated, content])
                    if self.config.lifecycle.end_run_indexes else None)))
            with self.sync.write_group() as evidence:  # one generation token for the run's writes
                self._write_lessons({i: self.view.as_record(l) for i, l in content.items()})
                evidence.extend(judged.evidence.values())
                self.sync.write("runs", [run])  # the view appends it to self.runs
                episodes = episodes_from_run(
                    namespace=self.namespace,
                    run_id=run_id,
                    task=task,
                    steps=steps,
                    verdict=verdict or Verdict(passed=outcome.passed, score=outcome.score),
                    config=self.config,
                    now=now,
                    events=events,
                    key_steps=claimed.episode_steps if claimed is not None else None,
                )
                audit_run(self.audit, self.view, run, integ, judged)
                write_episodes(self.audit, self.view, self.config, episodes, run=run, task=task, events=events,
                               now=now, lookup=self._lookup(), write=self.sync.write, evidence=evidence)
                for sid in sorted(activated):  # a workflow followed in the run: its outcome, as a skill's
                    followed = self.view.skills.get(sid)
                    if followed is not None and is_workflow(followed):
                        evidence.append(SkillEvidence(skill_id=sid, run_id=run_id, run_seq=seq, at=now, passed=run.passed,
                                                      failure_mode=events[0].fingerprint if events else None))
            self._semantic_from_run(run_id, judged)
            self._semantic_from_observations(run_id, steps, claimed is not None)
            self._workflow_from_run(run_id, task, steps)
            by_status = self.lessons_by_status()
            return RunReport(
                run_id=run_id,
                task_id=task.task_id,
                passed=outcome.passed,
                score=outcome.score,
                steps=outcome.steps,
                tool_errors=outcome.tool_errors,
                repeated_errors=outcome.repeated_errors,
                fingerprint_counts=outcome.fingerprint_counts,
                lesson_activations=sum(activated.values()),
                activated_lesson_ids=sorted(activated),
                new_lessons=integ.created,
                merged_lessons=[k for k, _ in integ.merged],
                promoted=[t.lesson_id for t in judged.transitions if t.new == "promoted"],
                suppressed=[t.lesson_id for t in judged.transitions if t.new == "suppressed"],
                archived=[t.lesson_id for t in judged.transitions if t.new == "archived"],
                utilities=judged.utilities,
                lessons_by_status=by_status,
                episodes_seen=sum(e.count for e in episodes),
                verdict=verdict,
            )

    def _workflow_from_run(self, run_id: str, task: TaskSpec, steps: Sequence[Step]) -> None:
        """A run of the memory's own that made progress joins the workflow of its kind (``workflow_own_runs``): its
        part up to the most progress it made, under the goal its task states."""
        cfg = self.config.workflows
        part = learned_part(steps, min_progress=cfg.workflow_own_min_progress) if cfg.workflow_own_runs else []
        goal = str((task.context or {}).get("goal") or task.goal or "")
        if part and goal:
            self.learn_from_trajectories([part], goal=goal, family=task.family, source=f"run:{run_id}")

    def correct_verdict(self, run_id: str, verdict: Verdict) -> dict[str, Any]:
        """Replace the verdict of a stored run (its referee was wrong): what the run said is folded again under it.

        The run's record takes the corrected pass and score; every lesson with evidence from the run gets a
        correction that restates its utility and pass under ``verdict`` (computed again from the parts the utility
        was measured from) and voids the conflict losses it took in the run (a contest decided under the denied
        feedback), so its stats and status follow as if the run had been judged right; a success episode
        every run of which is now a failed run is retired, and so is a skill whose episodes are all retired. The
        log keeps the evidence as it was, and the audit log the old verdict beside the new.

        Raises:
            InvalidArgument: no run ``run_id`` is stored in this namespace.

        Returns:
            ``{"run_id", "lessons": {id: {"status": [before, after], "utility": [before, after]}}, "episodes_retired",
            "skills_retired"}``.
        """
        with self._lock:
            self.sync.refresh()
            run = next((r for r in self.view.runs if r.run_id == run_id), None)
            if run is None:
                raise InvalidArgument(f"no run {run_id!r} is stored in namespace {self.namespace}")
            now, seq = self.clock(), self.view.last_seq
            fixed = run.model_copy(update={"passed": verdict.passed, "score": verdict.score})
            said = self.view.ledger.about_run(run_id)
            fixes = corrections(said, verdict, run_id=run_id, seq=seq, now=now, config=self.config,
                                known=lambda lesson_id: self.view.ledger.corrections_of(lesson_id, run_id))
            before = {f.lesson_id: self.lessons.get(f.lesson_id) for f in fixes}
            episodes, skills = retired_by(fixed, self.view.runs, self.view.episodes.values(), self.view.skills.values())
            with self.sync.write_group() as evidence:
                self.sync.write("runs", [fixed])
                if episodes:
                    self.sync.write("episodes", episodes)
                if skills:
                    self.sync.write("skills", skills)
                evidence.extend(fixes)
            was = {lesson_id: ev.utility for lesson_id, ev in said}
            result: dict[str, Any] = {
                "run_id": run_id,
                "lessons": {f.lesson_id: {"status": [getattr(before[f.lesson_id], "status", None),
                                                     getattr(self.lessons.get(f.lesson_id), "status", None)],
                                          "utility": [was.get(f.lesson_id), f.utility]} for f in fixes},
                "episodes_retired": [e.episode_id for e in episodes],
                "skills_retired": [s.id for s in skills],
            }
            self.audit.write("verdict_corrected", old=Verdict(passed=run.passed, score=run.score).model_dump(mode="json"),
                             new=verdict.model_dump(mode="json"), **result)
            return result

    def rejudge(self, referee: Referee, runs: Iterable[Trajectory]) -> list[dict[str, Any]]:
        """Judge stored runs again with another referee (the first was wrong) and correct each verdict that changes.

        The memory keeps what a run said, not its whole trajectory, so the caller hands the trajectories back
        (``runs``: the recorders it passed to ``general_update``, or any with the same ``run_id``, task and steps).
        A run whose new verdict has the stored pass and score is left as it is; every other goes through
        ``correct_verdict``, in the order given.

        Raises:
            InvalidArgument: a trajectory's ``run_id`` is not stored in this namespace (nothing is corrected).

        Returns:
            ``correct_verdict``'s result for each run corrected.
        """
        given = list(runs)
        with self._lock:
            self.sync.refresh()
            stored = {r.run_id: r for r in self.view.runs}
        missing = [t.run_id for t in given if t.run_id not in stored]
        if missing:
            raise InvalidArgument(f"no run {missing[0]!r} is stored in namespace {self.namespace} (nothing rejudged)")
        out: list[dict[str, Any]] = []
        for trajectory in given:
            verdict = referee.judge(trajectory.task, trajectory.steps)
            was = stored[trajectory.run_id]
            if verdict.passed != was.passed or abs(verdict.score - was.score) > 1e-9:
                out.append(self.correct_verdict(trajectory.run_id, verdict))
        return out

    def add_lessons(self, lessons: Sequence[Lesson]) -> list[str]:
        """Import lessons (e.g. hand-written rules) into this namespace; returns their ids.

        Raises:
            InvalidRecord: a lesson belongs to another namespace.
        """
        for lesson in lessons:
            if tuple(lesson.namespace) != self.namespace:
                raise InvalidRecord(
                    f"lesson {lesson.id} belongs to namespace {lesson.namespace}, not {self.namespace}"
                )
        with self._lock:
            changed = link_imported(with_simhash(lessons, self.config.lifecycle.simhash_bits), self.view)
            self._write_lessons(changed)
            linked: set[frozenset[str]] = set()
            for lesson in lessons:
                self.audit.write("lesson_imported", lesson_id=lesson.id, rule=lesson.rule_text[:300])
                for other in changed[lesson.id].conflicts_with:
                    pair = frozenset((lesson.id, other))
                    if other not in lesson.conflicts_with and pair not in linked:
                        linked.add(pair)
                        self.audit.write("conflict", lesson_id=lesson.id, other=other, run_id=None)
        return [l.id for l in lessons]

    def _synthesize(
        self, *, run_id: str, task: TaskSpec, steps: Sequence[Step], events: Sequence[ErrorEvent], now: float
    ) -> list[Lesson]:
        """Candidate lessons of a run: the chat model's when ``self.llm`` is set and answers well, else offline."""
        kwargs: dict[str, Any] = dict(
            namespace=self.namespace, run_id=run_id, steps=steps, events=events,
            prior_runs_seen=self.view.fp_runs, task=task, config=self.config, now=now,
        )
        if self.llm is None:
            return synthesize_offline(**kwargs)
        lessons, source = synthesize_with_llm(self.llm, **kwargs)
        self.audit.write("synthesis", run_id=run_id, source=source, lessons=[l.id for l in lessons])
        return lessons

    def _lookup(self) -> StoreLookup | None:
        """The indexes ``end_run`` reads (``end_run_indexes``), or None to scan every lesson."""
        if not self.config.lifecycle.end_run_indexes or self.view.index is None:
            return None
        return StoreLookup(self.view.index, self.graph)

    def _sweep_ids(self, run_seq: int, changed: Sequence[str]) -> list[str]:
        """The lessons the sweep can change at ``run_seq``, in table order: those due by then and those changed this run.

        Every other lesson's due run (``incremental.sweep_due``) is later, so a scan would leave it as it is.
        """
        index = self.view.index
        assert index is not None  # _lookup checked it
        return index.rows_in_order([*index.due_by(run_seq), *changed])

    def _write_lessons(self, changed: dict[str, Lesson]) -> None:
        """Store changed lessons; the view updates the table, graph and vector cache."""
        if changed:
            self.sync.write("lessons", list(changed.values()))

    def write(self, kind: str, records: Sequence[BaseModel]) -> None:
        """Store records of one kind as they are, and keep this memory in step: the bulk path of benches and migrations.

        No dedup, conflict linking or evidence: ``add_lessons`` imports lessons with
        those; this writes exactly what it is given (e.g. synthetic lessons and links).

        Raises:
            ValueError: Unknown kind.
            InvalidRecord: A record of the wrong type or another namespace.
        """
        self.sync.write(kind, records)

    # ------------------------------------------------------------------ reading
    def _context_runs(self, task: TaskSpec) -> list[RunRecord]:
        """Earlier runs of this task, else of its family on the same tool: its failure context."""
        same_task = [r for r in self.runs if r.task_id == task.task_id]
        if same_task:
            return same_task[-self.config.lifecycle.recent_runs:]
        return [r for r in self.runs if task.family and r.family == task.family and r.tool == task.tool][-self.config.lifecycle.recent_runs:]

    def _pre_run_difficulty(self, task: TaskSpec, context_runs: list[RunRecord], known: set[str]) -> float:
        """Difficulty before a run (design.md §5.6): the task's pitfalls, else the tool's failure rate.

        Pitfalls are the lessons the task needed in earlier runs plus the failures its last
        run still had. A failure rate alone would shrink the budget as lessons succeed,
        just when the task needs them all.
        """
        if context_runs:
            pitfalls = len(known) + len(context_runs[-1].failures)
            return 1.0 - math.exp(-pitfalls / self.config.retrieval.pitfall_scale)
        recent = [r for r in self.runs if r.tool == task.tool][-self.config.lifecycle.recent_runs:]
        if not recent:
            return 0.0
        return sum(1 for r in recent if r.tool_errors > 0 or not r.passed) / len(recent)

    def get_lesson(self, lesson_id: str) -> Lesson | None:
        """The lesson with this id in this namespace, or None."""
        return self.lessons.get(lesson_id)

    def evidence(self, lesson_id: str) -> list[RunEvidence]:
        """What each run said about a lesson, in the order its stats and status fold from (``learning.ledger``)."""
        with self._lock:
            return self.view.ledger.evidence(lesson_id)

    def text_rules(self, tool: str | None) -> list[Lesson]:
        """The text rules (``Lesson.applies_when`` set; ``textgames.rules``) scoped to ``tool``, whatever their status:
        what ``textgames.delivery.StepDelivery`` delivers from (it keeps the live ones). Costs the tool's lessons,
        not the store's."""
        with self._lock:
            return self.view.tool_text_rules(tool)

    def list_lessons(self, status: str | None = None) -> list[Lesson]:
        """All lessons of this namespace, optionally of one status, newest first."""
        out = [l for l in self.lessons.values() if status is None or l.status == status]
        return sorted(out, key=lambda l: -l.updated_at)

    def lessons_by_status(self) -> dict[str, int]:
        """Lesson counts per status (every status present, zero included): kept by the lesson index."""
        return self.view.lessons_by_status()

    def history(self, lesson_id: str) -> list[dict[str, Any]]:
        """Every audit record about one lesson, oldest first: why it exists and what happened to it."""
        return [
            r
            for r in self.audit.read()
            if r.get("lesson_id") == lesson_id or r.get("other") == lesson_id or lesson_id in r.get("chosen", [])
        ]

    def render(self, items: Sequence[ScoredItem]) -> str:
        """Hints for ``items`` as a quoted data block for a model prompt, assembled in instant memory
        within ``max_context_tokens`` (``retrieval.context.assemble``)."""
        return assemble(items, budget=self.config.context.max_context_tokens, config=self.config, now=self.clock()).text

    # ------------------------------------------------------------------ two-interface abstraction
    @by_hand
    def general_update(self, recorder: Trajectory, *, retrieved_as: str | None = None) -> RunReport:
        """Fold one finished trajectory into memory (the ``general_update`` interface).

        The lessons ``general_retrieve`` showed for the same run id are measured as its
        activations. ``retrieved_as``: the run id ``general_retrieve`` was called with, when
        the attempt was then recorded under another one (a caller that names runs late). The trajectory's
        steps go through a ``Run`` as they were numbered (``Run.observe``), which then ends (``Run.end``).

        Kept for one release for code written to the two-interface abstraction (it warns); use ``start_run``.
        """
        with self._lock:
            shown = self._shown.pop(recorder.run_id, [])
            if retrieved_as is not None and retrieved_as != recorder.run_id:
                shown += [a.model_copy(update={"run_id": recorder.run_id}) for a in self._shown.pop(retrieved_as, [])]
        run = Run(self, recorder.task, run_id=recorder.run_id, step_advice=False, activations=shown)
        for step in recorder.steps:
            run.observe(step)
        return run.end(recorder.verdict)

    @by_hand
    def general_retrieve(self, recorder: Trajectory) -> dict[str, Any]:
        """What memory offers before a task (the ``general_retrieve`` interface).

        What it shows is remembered under the trajectory's run id, so the matching
        ``general_update`` can measure whether those lessons helped.

        Kept for one release for code written to the two-interface abstraction (it warns); use ``start_run``.
        """
        with self._lock:
            result = self._pre_run(recorder.task, None, now=None, k=None)
        items = self._after_retrieval("pre_run", result, run_id=recorder.run_id)
        hints = hints_from_items(items)
        with self._lock:
            self._shown[recorder.run_id] = self.activations_for(items, run_id=recorder.run_id, step=0, moment="pre_run")
            while len(self._shown) > SHOWN_UNCLAIMED_MAX:  # retrievals never followed by an update (a frozen memory)
                del self._shown[next(iter(self._shown))]
        return {"hints": [h.model_dump() for h in hints], "text": result.text, "items": items}

    # ------------------------------------------------------------------ LangChain surfaces
    def as_retriever(self, kind: str = "pre_run", **kwargs: Any) -> "LessonRetriever":
        """A LangChain BaseRetriever over this memory (``kind``: ``pre_run`` or ``on_error``)."""
        from langmem_plus.retrieval.retrievers import LessonRetriever

        return LessonRetriever(memory=self, kind=kind, **kwargs)

    def as_tool(self) -> "BaseTool":
        """A LangChain tool an agent can call to look up lessons for an error or a goal."""
        from langmem_plus.retrieval.retrievers import lesson_lookup_tool

        return lesson_lookup_tool(self)

    def as_middleware(self, **options: Any) -> "LearningMiddleware":
        """A LangChain 1.x ``AgentMiddleware`` that makes a ``create_agent`` agent learn (``LearningMiddleware``)."""
        from langmem_plus.integrations.middleware import LearningMiddleware

        return LearningMiddleware(self, **options)

    def as_store(self, index: Any = None) -> "LangGraphChromaStore":
        """A LangGraph ``BaseStore`` on this memory's Chroma, in collections of its own under its namespace."""
        from langmem_plus.integrations.store import LangGraphChromaStore

        return LangGraphChromaStore(self.store.client, index=index, root=self.namespace, location=self.store.location)

    # ------------------------------------------------------------------ async twins
    # The async twins run the sync core on a worker thread (Chroma's client is synchronous); the
    # memory's lock makes them safe beside each other and beside sync callers.
    @by_hand_async
    async def acapture(
        self,
        step: Step,
        *,
        run_id: str,
        task: TaskSpec | None = None,
        history: Sequence[Step] = (),
        now: float | None = None,
    ) -> ErrorEvent | None:
        """Async ``capture``."""
        return await asyncio.to_thread(unwarned(self.capture), step, run_id=run_id, task=task, history=history, now=now)

    @by_hand_async
    async def aretrieve_pre_run(
        self,
        task: TaskSpec,
        context: WorkingContext | None = None,
        *,
        run_id: str | None = None,
        now: float | None = None,
        k: int | None = None,
    ) -> list[ScoredItem]:
        """Async ``retrieve_pre_run``."""
        return await asyncio.to_thread(unwarned(self.retrieve_pre_run), task, context, run_id=run_id, now=now, k=k)

    @by_hand_async
    async def aretrieve_on_error(
        self,
        event: ErrorEvent,
        context: WorkingContext | None = None,
        *,
        run_id: str | None = None,
        now: float | None = None,
        k: int | None = None,
    ) -> list[ScoredItem]:
        """Async ``retrieve_on_error``."""
        return await asyncio.to_thread(unwarned(self.retrieve_on_error), event, context, run_id=run_id, now=now, k=k)

    @by_hand_async
    async def aend_run(
        self,
        *,
        run_id: str,
        task: TaskSpec,
        steps: Sequence[Step],
        events: Sequence[ErrorEvent],
        activations: Sequence[Activation] = (),
        verdict: Verdict | None = None,
        now: float | None = None,
    ) -> RunReport:
        """Async ``end_run``."""
        return await asyncio.to_thread(
            unwarned(self.end_run), run_id=run_id, task=task, steps=steps, events=events, activations=activations,
            verdict=verdict, now=now,
        )

    async def arefresh(self) -> int:
        """Async ``refresh``."""
        return await asyncio.to_thread(self.refresh)

    async def aclose(self) -> None:
        """Async ``close``."""
        await asyncio.to_thread(self.close)

    async def __aenter__(self) -> "LearningMemory":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ other memory types
    def cognitive(self, agent_id: str) -> "CognitiveMemory":
        """The importance-routed cognitive memory (seed 004) of ``agent_id``, kept in this memory's store and audit log."""
        from langmem_plus.memory_types.cognitive_store import open_cognitive

        return open_cognitive(self, agent_id)
    # ------------------------------------------------------------------ facts and episodic recall
    def semantic(self) -> "SemanticMemory":
        """This namespace's facts with belief states (``SemanticMemory``), loaded on first use and kept."""
        from langmem_plus.memory_types.semantic import SemanticMemory

        with self._lock:
            if self._semantic is None:
                self._semantic = SemanticMemory(self.store, config=self.config, audit=self.audit, clock=self.clock,
                                                log=SharedFacts(self.view, self.sync), lock=self._lock)
            return self._semantic

    def _fact_items(self, vector: list[float], query: str, taken: set[str]) -> list[ScoredItem]:
        """Facts near a retrieval's query (``SemanticMemory.query``), as items that compete for its token budget.

        A fact whose evidence is all lessons already chosen (``lesson:<id>`` sources) would repeat them: left out.
        """
        if self._semantic is not None:  # loaded: it knows its facts, whoever taught them
            if not len(self._semantic):
                return []
        elif not self.store.has_records("facts"):
            return []
        cfg = self.config
        hits = self.semantic().query(query, cfg.retrieval.fact_budget + len(taken), vector=vector)
        shown = {f"lesson:{i}" for i in taken}
        hits = [h for h in hits if not h.fact.sources or not all(e.source in shown for e in h.fact.sources)]
        return [
            ScoredItem(kind="fact", item=h.fact, score=h.score, components={"cos": h.relevance, "confidence": h.fact.confidence},
                       reasons=[f"source:facts:hop{h.hop}"])
            for h in hits if h.relevance >= cfg.retrieval.fact_min_cos
        ]

    def _semantic_from_run(self, run_id: str, judged: Judgement) -> None:
        """Facts stated by the lessons a run verified (promoted, or helped): ``SemanticMemory.learn_from_lessons``."""
        promoted = {t.lesson_id for t in judged.transitions if t.new == "promoted"}
        ids = promoted | {i for i, u in judged.utilities.items() if u > self.config.semantic.semantic_lesson_min_utility}
        lessons = [self.lessons[i] for i in sorted(ids) if i in self.lessons]
        if self.config.semantic.semantic_from_runs and lessons:
            self.semantic().learn_from_lessons(lessons, promoted=promoted, utilities=judged.utilities, run_id=run_id)

    def _semantic_from_observations(self, run_id: str, steps: Sequence[Step], claimed: bool) -> None:
        """Facts the observations of a run a plugin claims state (a game describing its world), in step order
        (``semantic_from_observations``)."""
        if not self.config.semantic.semantic_from_observations or not claimed:
            return
        facts = self.semantic()
        for step in steps:
            if step.observation:
                facts.learn_from_observation(step.observation, source=f"{run_id}:{step.index}", run_id=run_id)

    def retrieve_facts(self, text: str, limit: int = 5) -> "list[FactHit]":
        """Facts relevant to ``text`` beside what the retrievals return: ``semantic().query`` (held and contested)."""
        return self.semantic().query(text, limit)

    def episodes(self) -> list[Episode]:
        """Every episode of this namespace as memory holds it (sightings folded, TTLs aged), faded ones included."""
        with self._lock:
            self.sync.refresh()  # what other writers stored since the last look
            return [self.view.episode(e) for e in self.view.episodes.values()]

    def recall_at(self, time: float, window: float, *, now: float | None = None) -> list[Episode]:
        """Episodes that happened within ``window`` seconds of ``time``, faded ones skipped (``learning.recall``)."""
        return recall_at(self.episodes(), time, window, now=self.clock() if now is None else now, config=self.config)

    def recall_before(self, time: float, limit: int = 5, *, now: float | None = None) -> list[Episode]:
        """The most significant episodes before ``time``, faded ones skipped (``learning.recall``)."""
        return recall_before(self.episodes(), time, limit, now=self.clock() if now is None else now, config=self.config)

    def recall_sequence(self, start: str, direction: Direction = "forward", *, now: float | None = None) -> list[Episode]:
        """Episodes from ``start`` along ``leads_to`` (forward) or ``caused_by`` (backward) links (``learning.recall``)."""
        now = self.clock() if now is None else now
        return recall_sequence(self.episodes(), start, direction, now=now, config=self.config)

    def link_episodes(self, cause_id: str, effect_id: str) -> None:
        """Record that episode ``cause_id`` led to ``effect_id`` (both stored; both must exist).

        The link is evidence on the shared log (``EpisodeEvidence`` with ``count`` 0), folded
        into both episodes like a sighting: two writers linking the same episode lose neither link.

        Raises:
            InvalidRecord: Either episode is not in this namespace.
        """
        found = {e.episode_id for e in self.store.get("episodes", [cause_id, effect_id]) if isinstance(e, Episode)}
        missing = [i for i in (cause_id, effect_id) if i not in found]
        if missing:
            raise InvalidRecord(f"no episode {missing[0]!r} in namespace {self.namespace!r}")
        with self._lock:
            self.sync.publish_evidence(link_evidence(cause_id, effect_id, run_seq=self.view.last_seq, at=self.clock()))


__all__ = ["DEFAULT_PATH", "LearningMemory", "Trajectory"]
