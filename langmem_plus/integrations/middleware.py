"""LearningMiddleware: any LangChain 1.x ``create_agent`` agent learns, with nothing for the model to call.

Memory is read and written deterministically around the agent loop (DESIGN §8):

- ``before_agent``: opens a run (``lm_run_id`` in the state) and retrieves the lessons
  for its goal (the first human message, unless the caller names one).
- ``wrap_model_call``: the pre-run lessons and the on-error lessons of the latest tool
  round go into the system message, as quoted data with their ids, within a token
  budget. With ``text_rules="at_step"`` the block is the one the bench's executor is shown
  (``short_memory``): the attempt opened as the bench opens one (``triggered_start``), the
  text rules that stand after the latest tool result (``StepDelivery``), short lines
  without ids under one title (the activations in the state carry the ids). The request
  is overridden; nothing is written into the message history.
- ``wrap_tool_call``: with ``text_rules="at_step"`` and the guard, a call memory holds notes
  on is answered with them instead of running (once per action and step); every tool call
  that runs becomes a ``Step``; a raised exception or a
  ``ToolMessage`` with ``status="error"`` is a hard failure, and a ``ToolReport`` in the
  message's artifact (``env_tool``) gives the step all four feedback channels; a failure is
  fingerprinted by ``memory.capture``; a failure retrieves on-error lessons for the next model call.
  The call's ``ToolMessage`` comes back inside a ``Command`` that also carries the
  step, the event and the activations into the state.
- ``after_agent``: ``memory.end_run`` inside the graph (synthesis, utility, promotion,
  suppression); the ``RunReport`` goes into ``lm_report``.

Per-run data lives in the agent state, never on the middleware, so one instance serves
any number of concurrent runs and threads.

Errors and placement. A tool exception is captured and re-raised unchanged, so the
agent's error policy holds: ``create_agent``'s ToolNode (default ``handle_tool_errors``)
turns only invalid-argument errors into error ``ToolMessage``s and re-raises the rest,
which ends the run. To let the model see a tool's error, and memory record it in the
run, list this middleware *before* (outside) ``ToolErrorMiddleware`` /
``ToolRetryMiddleware``: it then sees each call's final outcome, the error
``ToolMessage`` they make included. Listed after them, it sees every attempt, but an
exception it re-raises is turned into a message outside it, so that step is captured
in the event store and audit log, not in the run. LangGraph control flow
(``GraphInterrupt``, ``ParentCommand``: ``GraphBubbleUp``) passes through untouched, and a
tool's ``Command`` result is returned as is, never captured as a step.

Example:
    >>> from langchain.agents import create_agent  # doctest: +SKIP
    >>> agent = create_agent(model, tools, middleware=[memory.as_middleware()])  # doctest: +SKIP
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    ToolCallRequest,
)
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.errors import GraphBubbleUp
from langgraph.types import Command, Overwrite

from langmem_plus._text import stable_id
from langmem_plus.errors import InvalidArgument
from langmem_plus.integrations.agent_run import (
    SHORT_TITLE,
    LearningState,
    OnErrorNote,
    agent_verdict,
    applied_lessons,
    as_json,
    context_value,
    exception_step,
    first_human_text,
    fit_budget,
    memory_block,
    on_error_items,
    proposed_action,
    read_records,
    read_report,
    round_position,
    run_steps,
    short_memory,
    shown_items,
    tool_action,
    tool_step,
    with_memory,
)
from langmem_plus.integrations.step_rules import StepRules, answered
from langmem_plus.records import (
    Activation,
    ErrorEvent,
    Lesson,
    RunReport,
    ScoredItem,
    Step,
    TaskSpec,
    Verdict,
    WorkingContext,
)
from langmem_plus.retrieval.rule_lines import joined_hint_lines
from langmem_plus.retrieval.triggered import is_text_rule
from langmem_plus.retrieval.triggered_start import TriggeredStart, open_triggered

if TYPE_CHECKING:
    from langmem_plus.memory import LearningMemory
    from langmem_plus.referee import Referee


NO_CAP = 1 << 30
"""Tokens a block may take when the middleware's budget is None (no cap)."""
GUARD_NOTE = "Not run: memory has notes on this command. Choose again with them; call it again to run it anyway."
"""First line of the message a guarded tool call gets instead of running."""
TEXT_RULE_MODES = ("pre_run", "at_step")
"""``LearningMiddleware(text_rules=...)``: text rules among the pre-run lessons, or at the steps they fire on."""


class _Default(enum.Enum):
    DEFAULT = "default"


DEFAULT = _Default.DEFAULT
"""Sentinel: use the default (a memory's config field, the agent-signals verdict); None means off."""

GoalOption = Union[str, Callable[[Mapping[str, Any], Any], str], None]
"""A fixed goal, a function of (state, runtime), or None for ``runtime.context`` / the first human message."""


def _task_of(state: Mapping[str, Any]) -> TaskSpec:
    """The run's task, parsed from the state's JSON."""
    return TaskSpec.model_validate(state["lm_task"])


@dataclass(frozen=True)
class _Call:
    """One tool call inside a run: what the shared core needs to turn its outcome into a state update."""

    memory: LearningMemory
    run_id: str
    task: TaskSpec
    index: int
    next_index: int
    tool: str
    action: str
    tool_call_id: str
    history: list[Step]
    shown: list[Lesson]
    budget: int | None
    docs: bool
    state: Mapping[str, Any]
    """The agent state the call was made in."""
    args: Mapping[str, Any]
    """The call's arguments, as the model gave them."""
    activated: frozenset[str] = frozenset()
    """Lessons the run has an activation for already."""

    def capture_args(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "task": self.task, "history": self.history}

    def step(self, message: ToolMessage) -> Step:
        applied = applied_lessons(self.action, self.shown)
        return tool_step(self.index, self.tool, self.action, message, applied, docs=self.docs)

    def failed(self, exc: BaseException) -> Step:
        return exception_step(self.index, self.tool, self.action, exc, self.tool_call_id)

    def context(self, event: ErrorEvent) -> WorkingContext:
        recent = self.history[-self.memory.config.repeat_window :]
        return WorkingContext(
            goal=self.task.goal,
            context=event.tool or "",
            last_fail=event.error_text[: self.memory.config.context_text_chars],
            recent_failures=1 + sum(1 for s in recent if s.feedback.failed),
        )

    def update(self, message: ToolMessage, step: Step, event: ErrorEvent | None, items: list[ScoredItem]) -> Command[Any]:
        """The ToolMessage plus the run's new step, event, on-error note and activations, as one Command."""
        items = fit_budget(items, self.budget)
        update: dict[str, Any] = {"messages": [message], "lm_steps": as_json([step])}
        if event is not None:
            update["lm_events"] = as_json([event])
        if items:
            update["lm_hints"] = as_json([OnErrorNote(tool_call_id=self.tool_call_id, items=items)])
            update["lm_activations"] = as_json(self.memory.activations_for(
                items, run_id=self.run_id, step=self.next_index, moment="on_error",
                fingerprint_id=event.fingerprint_id if event else None,
            ))
        return Command(update=update)


class LearningMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """An ``AgentMiddleware`` that makes a ``create_agent`` agent learn from its tool errors.

    Args:
        memory: The memory it was built from (``memory.as_middleware()``).
        goal: The run's goal: a string, a function of (state, runtime), or None for
            ``runtime.context["goal"]`` (or ``.goal``) and else the first human message.
        task_id: Names the task for baselines and pre-run context; None derives it from the goal.
        tool: The task's tool scope (lessons scoped to another tool are not retrieved before a run).
        domain: The task's domain scope.
        family: The task's family (tasks of one kind, e.g. every game of one environment), which memory's run
            statistics group by; None leaves it unset.
        docs_tools: Names of lookup tools (a schema, a manual): their calls are recorded as
            docs steps, never failures, so a fix after a lookup still pairs with its error.
        memory_from_context: ``runtime -> LearningMemory``, e.g. a memory per user named in
            ``runtime.context``; None uses ``memory``.
        budget_tokens: Token cap on the memory block per model call; ``DEFAULT`` takes the
            memory's ``MemoryConfig.agent_context_tokens``, None shows all retrieved lessons.
        pre_run: Retrieve lessons for the goal when the agent starts.
        on_error: Retrieve lessons when a tool call fails, for the next model call.
        end_run: Run ``memory.end_run`` when the agent ends (synthesis, utility, lifecycle).
        referee: Judges the run for ``end_run``; ``DEFAULT`` reads the agent's signals
            (``agent_verdict``), None passes no verdict.
        text_rules: How text rules (``learning.textrules``: a game's "Avoid `eat <X>`") reach the model.
            ``"pre_run"``: among the pre-run lessons, ranked with them. ``"at_step"``: as the bench delivers them
            (``retrieval.triggered.StepDelivery``, ``integrations.step_rules``): at each model call the rules that
            stand after the latest tool result, on the valid actions it reported (``env_tool``), grounded on them;
            with the guard (``MemoryConfig.text_guard``, ``"all"`` by default) a warning (and with ``"all"`` a
            recommendation) waits until the model proposes what it bears on: that call is not run, its message
            gives the notes, and the model chooses again (the same call proposed again runs). So does a pre-run
            avoidance of literal actions (an avoided episode's ``close door``), until a call it quotes. Each rule
            is activated once, at the step it first stood. The block is in short lines without ids
            (``short_memory``), which ``read_memory_block`` reads back.

    Example:
        >>> agent = create_agent(model, tools, middleware=[memory.as_middleware()])  # doctest: +SKIP
        >>> result = agent.invoke({"messages": [("user", "names of people over 30")]})  # doctest: +SKIP
        >>> LearningMiddleware.report(result).new_lessons  # doctest: +SKIP
    """

    state_schema = LearningState  # type: ignore[assignment]  # its own keys, as langchain's middleware declare theirs

    def __init__(
        self,
        memory: LearningMemory,
        *,
        goal: GoalOption = None,
        task_id: str | None = None,
        tool: str | None = None,
        domain: str | None = None,
        family: str | None = None,
        docs_tools: Collection[str] = (),
        memory_from_context: Callable[[Any], LearningMemory] | None = None,
        budget_tokens: int | None | _Default = DEFAULT,
        pre_run: bool = True,
        on_error: bool = True,
        end_run: bool = True,
        referee: Referee | None | _Default = DEFAULT,
        text_rules: str = "pre_run",
    ) -> None:
        super().__init__()
        if text_rules not in TEXT_RULE_MODES:
            raise InvalidArgument(f"text_rules must be one of {', '.join(TEXT_RULE_MODES)}, got {text_rules!r}")
        self.text_rules = text_rules
        self._rules = StepRules()
        self.memory = memory
        self.goal, self.task_id, self.tool, self.domain, self.family = goal, task_id, tool, domain, family
        self.docs_tools = frozenset(docs_tools)
        self.memory_from_context = memory_from_context
        self.budget_tokens = budget_tokens
        self.pre_run, self.on_error, self.end_run = pre_run, on_error, end_run
        self.referee = referee

    @staticmethod
    def report(result: Mapping[str, Any]) -> RunReport | None:
        """The ``RunReport`` in an agent's result (the state keeps it as JSON); None before the run ended."""
        return read_report(result)

    # ------------------------------------------------------------------ shared core
    def _memory(self, runtime: Any) -> LearningMemory:
        return self.memory_from_context(runtime) if self.memory_from_context is not None else self.memory

    def _budget(self, memory: LearningMemory) -> int | None:
        return memory.config.agent_context_tokens if self.budget_tokens is DEFAULT else self.budget_tokens

    def _task(self, state: Mapping[str, Any], runtime: Any) -> TaskSpec:
        if callable(self.goal):
            goal = self.goal(state, runtime)
        else:
            named = context_value(runtime, "goal")
            goal = self.goal or (named if isinstance(named, str) else None) or first_human_text(state.get("messages") or [])
        task_id = self.task_id or stable_id("task", goal)
        return TaskSpec(task_id=task_id, goal=goal, tool=self.tool, domain=self.domain, family=self.family)

    def _opened(self, memory: LearningMemory, task: TaskSpec, run_id: str, items: list[ScoredItem]) -> dict[str, Any]:
        """The state update that opens a run: fresh lists, the pre-run lessons and their activations (with
        ``text_rules="at_step"``, those of the triggered block, held ones included)."""
        if self.text_rules == "at_step":
            items = list(open_triggered(items, memory.config, budget=self._cap(memory)).fitted)
        else:
            items = fit_budget(items, self._budget(memory))
        activations = memory.activations_for(items, run_id=run_id, step=0, moment="pre_run")
        return {
            "lm_run_id": run_id,
            "lm_task": task.model_dump(mode="json"),
            "lm_pre_run": as_json(items),
            "lm_hints": Overwrite([]),
            "lm_steps": Overwrite([]),
            "lm_events": Overwrite([]),
            "lm_activations": Overwrite(as_json(activations)),
            "lm_guard": Overwrite([]),
            "lm_report": None,
        }

    def _cap(self, memory: LearningMemory) -> int:
        """The budget as a number of tokens (no cap: as many as any block could hold)."""
        budget = self._budget(memory)
        return budget if budget is not None else NO_CAP

    def _request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """The model request with this run's lessons in its system message (unchanged when there are none); with
        ``text_rules="at_step"``, in the short form triggered delivery shows (``short_memory``)."""
        memory = self._memory(request.runtime)
        state = request.state if isinstance(request.state, Mapping) else {}
        if self.text_rules == "at_step" and state.get("lm_task") is not None:
            args = self._rules_args(memory, state, run_steps(state))
            block = short_memory(args["opening"](), on_error_items(state, request.messages), self._rules.shown(**args),
                                 self._cap(memory))
        else:
            budget = self._budget(memory)
            block = memory_block(shown_items(request.state, request.messages, budget), budget).text
        return request.override(system_message=with_memory(request.system_message, block)) if block else request

    def _pre_run_items(self, items: list[ScoredItem]) -> list[ScoredItem]:
        """The pre-run items to show: with ``text_rules="at_step"``, not the text rules (they come at their steps)."""
        return [i for i in items if not is_text_rule(i.item)] if self.text_rules == "at_step" else items

    def _rules_args(self, memory: LearningMemory, state: Mapping[str, Any], steps: list[Step]) -> dict[str, Any]:
        """``StepRules``' arguments for this run's state; how the run opened is read from it only when needed."""
        def opening() -> TriggeredStart:
            return open_triggered(read_records(state, "lm_pre_run", ScoredItem), memory.config, budget=self._cap(memory))

        return {"memory": memory, "run_id": str(state.get("lm_run_id")), "task": _task_of(state), "steps": steps,
                "answers": answered(state.get("lm_guard") or []), "opening": opening}

    def _call(self, request: ToolCallRequest) -> _Call | None:
        """The run's view of a tool call; None outside a run (no ``lm_run_id`` in the state)."""
        state = request.state if isinstance(request.state, Mapping) else {}
        run_id, task = state.get("lm_run_id"), state.get("lm_task")
        if not run_id or task is None:
            return None
        memory = self._memory(request.runtime)
        steps = run_steps(state)
        call = request.tool_call
        args = call.get("args") or {}
        call_id = str(call.get("id") or "")
        position, count = round_position(state.get("messages") or [], call_id)
        shown_ids = dict.fromkeys(a.lesson_id for a in read_records(state, "lm_activations", Activation))
        shown = [l for l in map(memory.get_lesson, shown_ids) if l is not None]
        return _Call(
            memory=memory, run_id=run_id, task=_task_of(state),
            index=len(steps) + position, next_index=len(steps) + count, tool=call["name"],
            action=tool_action(call["name"], args), tool_call_id=call_id,
            history=steps, shown=shown, budget=self._budget(memory), docs=call["name"] in self.docs_tools,
            state=state, args=args, activated=frozenset(shown_ids),
        )

    def _end_args(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """``end_run``'s arguments from the state: the run's steps in order, events, activations, verdict."""
        steps = run_steps(state)
        task = _task_of(state)
        verdict: Verdict | None
        if self.referee is DEFAULT:
            verdict = agent_verdict(state.get("messages") or [], steps)
        else:
            verdict = self.referee.judge(task, steps) if self.referee is not None else None
        return {
            "run_id": state["lm_run_id"], "task": task, "steps": steps,
            "events": read_records(state, "lm_events", ErrorEvent),
            "activations": read_records(state, "lm_activations", Activation), "verdict": verdict,
        }

    def _ends(self, state: Mapping[str, Any]) -> bool:
        return self.end_run and bool(state.get("lm_run_id")) and state.get("lm_task") is not None

    # ------------------------------------------------------------------ before / after the agent
    def before_agent(self, state: AgentState[Any], runtime: Any) -> dict[str, Any] | None:
        """Open a run and retrieve the lessons for its goal."""
        memory, task, run_id = self._memory(runtime), self._task(state, runtime), uuid.uuid4().hex[:12]
        items = memory.retrieve_pre_run(task, run_id=run_id) if self.pre_run else []
        return self._opened(memory, task, run_id, self._pre_run_items(items))

    async def abefore_agent(self, state: AgentState[Any], runtime: Any) -> dict[str, Any] | None:
        """Async ``before_agent``."""
        memory, task, run_id = self._memory(runtime), self._task(state, runtime), uuid.uuid4().hex[:12]
        items = await memory.aretrieve_pre_run(task, run_id=run_id) if self.pre_run else []
        return self._opened(memory, task, run_id, self._pre_run_items(items))

    def after_agent(self, state: AgentState[Any], runtime: Any) -> dict[str, Any] | None:
        """``end_run`` inside the graph; its report goes into ``lm_report``."""
        self._rules.drop(str(state.get("lm_run_id")))
        if not self._ends(state):
            return None
        return {"lm_report": self._memory(runtime).end_run(**self._end_args(state)).model_dump(mode="json")}

    async def aafter_agent(self, state: AgentState[Any], runtime: Any) -> dict[str, Any] | None:
        """Async ``after_agent``."""
        self._rules.drop(str(state.get("lm_run_id")))
        if not self._ends(state):
            return None
        report = await self._memory(runtime).aend_run(**self._end_args(state))
        return {"lm_report": report.model_dump(mode="json")}

    # ------------------------------------------------------------------ around model and tool calls
    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelResponse[Any] | AIMessage:
        """Call the model with this run's lessons in the system message."""
        return handler(self._request(request))

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]
    ) -> ModelResponse[Any] | AIMessage:
        """Async ``wrap_model_call``."""
        return await handler(self._request(request))

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]]
    ) -> ToolMessage | Command[Any]:
        """Run the tool; record its step, capture a failure and retrieve lessons for it."""
        call = self._call(request)
        if call is None:
            return handler(request)
        guarded = self._guarded(call)
        if guarded is not None:
            return guarded
        try:
            result = handler(request)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            call.memory.capture(call.failed(exc), **call.capture_args())
            raise
        if not isinstance(result, ToolMessage):
            return result
        step = call.step(result)
        event = call.memory.capture(step, **call.capture_args())
        items = call.memory.retrieve_on_error(event, call.context(event)) if event is not None and self.on_error else []
        return self._with_rules(call, call.update(result, step, event, items))

    def _with_rules(self, call: _Call, update: Command[Any]) -> Command[Any]:
        """With ``text_rules="at_step"``: the update plus an activation for each rule delivered in the run so far
        (shown, or standing held, before this call) and not yet activated."""
        if self.text_rules != "at_step" or not isinstance(update.update, dict):
            return update
        fresh = [a for a in self._rules.activations(**self._rules_args(call.memory, call.state, call.history))
                 if a.lesson_id not in call.activated]
        if not fresh:
            return update
        return Command(update={**update.update, "lm_activations": [*update.update.get("lm_activations", []), *as_json(fresh)]})

    def _guarded(self, call: _Call) -> Command[Any] | None:
        """The guard (``MemoryConfig.text_guard``, ``text_rules="at_step"``): when memory holds notes on the proposed
        action, the tool is not run; its message gives the notes (the next model call's system message shows them
        too) and the state records the proposal, so proposed again at this step it runs. None: run it."""
        if self.text_rules != "at_step" or call.docs:
            return None
        action = proposed_action(call.tool, call.args)
        held = self._rules.check(**self._rules_args(call.memory, call.state, call.history), action=action)
        if not held:
            return None
        notes = "\n".join([GUARD_NOTE, SHORT_TITLE, *joined_hint_lines(held)])  # a memory block: read_memory_block reads it
        message = ToolMessage(content=notes, tool_call_id=call.tool_call_id, name=call.tool, artifact={"guarded": action})
        return Command(update={"messages": [message], "lm_guard": [{"step": len(call.history), "action": action}]})

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]]
    ) -> ToolMessage | Command[Any]:
        """Async ``wrap_tool_call``."""
        call = self._call(request)
        if call is None:
            return await handler(request)
        guarded = self._guarded(call)
        if guarded is not None:
            return guarded
        try:
            result = await handler(request)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            await call.memory.acapture(call.failed(exc), **call.capture_args())
            raise
        if not isinstance(result, ToolMessage):
            return result
        step = call.step(result)
        event = await call.memory.acapture(step, **call.capture_args())
        on_error = event is not None and self.on_error
        items = await call.memory.aretrieve_on_error(event, call.context(event)) if on_error and event else []
        return self._with_rules(call, call.update(result, step, event, items))


__all__ = ["DEFAULT", "LearningMiddleware"]
