"""Episodes from a finished run: successes, near-misses, avoidances (DESIGN §6, AMM spec §3).

First depth, rule-based and pure. From one run and its verdict:

- **success** when the run passed: the successful commands, in order, as a
  procedure that worked for this goal;
- **near-miss** only in a failed run with credible progress: a step whose
  ``feedback.progress`` rose to ``NEARMISS_MIN_PROGRESS`` or more; at most
  ``nearmiss_cap`` per run (the caller caps across runs per (template, context));
- **avoidance** for a failure fingerprint repeated ``AVOIDANCE_MIN_REPEATS``
  times in the run, expiring after ``avoidance_ttl_episodes`` episodes.

Ids are content hashes (the same procedure for the same task gets the same id),
and each episode carries the SimHash of goal_signature + summary for dedup.

Example:
    >>> from langmem_plus.records import Step, TaskSpec, Verdict
    >>> task = TaskSpec(task_id="t1", goal="names of people over 30", tool="gridtool")
    >>> eps = episodes_from_run(namespace=("ns",), run_id="r1", task=task,
    ...     steps=[Step(index=0, action="keep age > 30 | pick name")],
    ...     verdict=Verdict(passed=True, score=1.0), config=DEFAULT_CONFIG, now=0.0)
    >>> [(e.kind, e.action_seq, e.subgoal_template) for e in eps]
    [('success', ['keep age > 30 | pick name'], 'names of people over <num>')]
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langmem_plus._text import stable_id
from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.learning.dedup import simhash
from langmem_plus.learning.synthesis import action_pattern
from langmem_plus.records import Episode, EpisodeKind, ErrorEvent, Namespace, Step, TaskSpec, Verdict

NEARMISS_MIN_PROGRESS = 0.5
"""Progress a failed run must reach, on a step that raised it, for a near-miss: "credible
progress" of the AMM spec, halfway being the least that says the approach was right."""

AVOIDANCE_MIN_REPEATS = 2
"""Occurrences of one fingerprint in a run that make an avoidance ("the same failure
repeated", DESIGN §6)."""

SUCCESS_WEIGHT = 1.0
"""Initial ``success_weight`` of a success episode (AMM spec record schema); later reuse raises it."""

AVOIDANCE_WEIGHT = 0.0
"""``success_weight`` of an avoidance: log(1 + 0) = 0, no success prior in the episode score."""

SUMMARY_MAX_CHARS = 400
"""Longest episode summary; keeps stored documents and prompts small."""

OBS_MAX_CHARS = 200
"""Longest observation kept per step in ``obs_seq``."""

_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")


def goal_template(goal: str) -> str:
    """A goal with its literals replaced, so goals of one kind share a template.

    Example:
        >>> goal_template("rows where city is 'Paris' and age > 30")
        'rows where city is <str> and age > <num>'
    """
    return _NUMBER.sub("<num>", _QUOTED.sub("<str>", " ".join(goal.split())))


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_command(step: Step) -> bool:
    return step.info.get("kind") != "docs"


def _state_fingerprint(steps: Sequence[Step]) -> list[str]:
    last = next((s.state_after for s in reversed(steps) if s.state_after), None)
    return sorted(f"{k}:{v}" for k, v in (last or {}).items())


def _episode(
    kind: EpisodeKind,
    key: str,
    *,
    namespace: Namespace,
    run_id: str,
    task: TaskSpec,
    summary: str,
    config: MemoryConfig,
    now: float,
    **fields: object,
) -> Episode:
    summary = _cut(summary, SUMMARY_MAX_CHARS)
    return Episode.model_validate(
        {
            "episode_id": stable_id("ep", *namespace, kind, task.task_id, key),
            "namespace": namespace,
            "kind": kind,
            "goal_signature": task.goal,
            "subgoal_template": task.family or goal_template(task.goal),
            "context": task.tool or "",
            "summary": summary,
            "simhash": format(simhash(f"{task.goal} {summary}", config.simhash_bits), "x"),
            "run_id": run_id,
            "created_at": now,
            "last_seen_at": now,
            **fields,
        }
    )


def _nearmiss_steps(commands: Sequence[Step], cap: int) -> list[tuple[float, Step]]:
    """Steps that raised progress to NEARMISS_MIN_PROGRESS or more, best first, at most ``cap``."""
    best: float = 0.0
    found: list[tuple[float, Step]] = []
    for step in commands:
        p = step.feedback.progress
        if p is None:
            continue
        if p > best and p >= NEARMISS_MIN_PROGRESS:
            found.append((p, step))
        best = max(best, p)
    found.sort(key=lambda ps: (-ps[0], ps[1].index))
    return found[:cap]


def episodes_from_run(
    *,
    namespace: Namespace,
    run_id: str,
    task: TaskSpec,
    steps: Sequence[Step],
    verdict: Verdict,
    config: MemoryConfig = DEFAULT_CONFIG,
    now: float,
    events: Sequence[ErrorEvent] = (),
) -> list[Episode]:
    """The episodes one finished run leaves behind (DESIGN §6 "Episodes").

    Args:
        namespace: The memory namespace.
        run_id: The run.
        task: Its task: goal, tool (the episode context), family (the template).
        steps: The run's steps; docs lookups (``info["kind"] == "docs"``) are not actions.
        verdict: The referee's verdict; ``passed`` decides success vs near-miss.
        config: Supplies ``nearmiss_cap``, ``avoidance_ttl_episodes``, ``simhash_bits``.
        now: Current time, epoch seconds.
        events: The run's error events, for avoidances (none without them; hard
            precondition violations are not modelled at this depth).

    Returns:
        At most one success, ``nearmiss_cap`` near-misses and one avoidance per
        repeated fingerprint.
    """

    def make(kind: EpisodeKind, key: str, summary: str, **fields: object) -> Episode:
        return _episode(
            kind, key, namespace=namespace, run_id=run_id, task=task, summary=summary, config=config, now=now, **fields
        )

    commands = [s for s in sorted(steps, key=lambda s: s.index) if _is_command(s)]
    out: list[Episode] = []
    if verdict.passed:
        good = [s for s in commands if not s.feedback.failed]
        actions = [s.action for s in good]
        out.append(
            make(
                "success",
                "\n".join(actions),
                summary=f"Solved '{task.goal}' with {len(actions)} command(s): " + " ; ".join(actions),
                action_seq=actions,
                obs_seq=[_cut(s.observation, OBS_MAX_CHARS) for s in good],
                state_fingerprint=_state_fingerprint(commands),
                success_weight=SUCCESS_WEIGHT,
                significance=verdict.score,
            )
        )
    else:
        for progress, step in _nearmiss_steps(commands, config.nearmiss_cap):
            upto = [s for s in commands if s.index <= step.index and (s is step or not s.feedback.failed)]
            actions = [s.action for s in upto]
            out.append(
                make(
                    "nearmiss",
                    "\n".join(actions),
                    summary=f"Reached progress {progress:.2f} on '{task.goal}' with: " + " ; ".join(actions),
                    action_seq=actions,
                    obs_seq=[_cut(s.observation, OBS_MAX_CHARS) for s in upto],
                    state_fingerprint=_state_fingerprint(upto),
                    success_weight=progress,
                )
            )
    groups: dict[str, list[ErrorEvent]] = {}
    for ev in events:
        groups.setdefault(ev.fingerprint_id, []).append(ev)
    for fp_id, evs in groups.items():
        if len(evs) < AVOIDANCE_MIN_REPEATS:
            continue
        actions = list(dict.fromkeys(ev.action for ev in evs if ev.action))
        pattern = action_pattern(actions[0]) if actions else evs[0].channel
        out.append(
            make(
                "avoidance",
                fp_id,
                summary=f"`{pattern}` fails with: {evs[0].fingerprint} ({len(evs)}x in one run)",
                action_seq=actions,
                obs_seq=[_cut(evs[0].error_text, OBS_MAX_CHARS)],
                state_fingerprint=[f"fp:{fp_id}"],
                avoid_tags=list(dict.fromkeys(t for ev in evs for t in ev.tags)),
                ttl_episodes=config.avoidance_ttl_episodes,
                success_weight=AVOIDANCE_WEIGHT,
            )
        )
    return out


__all__ = [
    "AVOIDANCE_MIN_REPEATS",
    "AVOIDANCE_WEIGHT",
    "NEARMISS_MIN_PROGRESS",
    "OBS_MAX_CHARS",
    "SUCCESS_WEIGHT",
    "SUMMARY_MAX_CHARS",
    "episodes_from_run",
    "goal_template",
]
