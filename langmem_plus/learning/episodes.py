"""Episodes from a finished run: successes, near-misses, avoidances (design.md §6, AMM spec §3).

First depth, rule-based and pure. From one run and its verdict:

- **success** when the run passed: the successful commands, in order, as a
  procedure that worked for this goal;
- **near-miss** only in a failed run with credible progress: a step whose
  ``feedback.progress`` rose to ``nearmiss_min_progress`` or more; at most
  ``nearmiss_cap`` per run (the caller caps across runs per (template, context));
- **avoidance** for a failure fingerprint repeated ``avoidance_min_repeats``
  times in the run, expiring after ``avoidance_ttl_episodes`` episodes.

Ids are content hashes (the same procedure for the same task gets the same id),
and each episode carries the SimHash of goal_signature + summary for dedup.

Write policy against what is stored (``plan_episode_writes``): a new episode within
``episode_dedup_max_hamming`` SimHash bits of a stored one of the same kind merges
into it (count added, last_seen and strength refreshed, the avoidance TTL renewed);
near-misses are capped per (subgoal template, context), a better one replacing the
weakest; every other live avoidance loses one episode of TTL per run (an "episode"
is one attempt, as in the AMM spec). A merge is a sighting (``EpisodeEvidence``) that
the fold adds, and the TTL is counted from the runs (``age_episode``): no stored
counter is read, changed and written back, so two writers lose no count. ``episode_strength`` decays while unused,
slower for significant episodes, and ``episode_recallable`` says whether retrieval
may show an episode at all.

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
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field

from langmem_plus._text import stable_id
from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.learning.dedup import hamming, normalize_rule, simhash
from langmem_plus.learning.synthesis import action_pattern
from langmem_plus.records import (
    Episode,
    EpisodeEvidence,
    EpisodeKind,
    ErrorEvent,
    Namespace,
    Step,
    TaskSpec,
    Verdict,
    with_fields,
)

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


def episode_simhash(goal: str, summary: str, bits: int = DEFAULT_CONFIG.lifecycle.simhash_bits) -> int:
    """SimHash of goal_signature + summary for episode dedup (design.md §6), on normalised text:
    lowercase, literals replaced (``goal_template``), so the same procedure with other
    values or other casing lands within a few bits.

    Example:
        >>> a = episode_simhash("g", "Solved with: LOAD people | KEEP age >= 30")
        >>> a == episode_simhash("g", "solved with:  load people | keep age >= 31")
        True
    """
    return simhash(normalize_rule(goal_template(f"{goal} {summary}")), bits)


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
            "simhash": format(episode_simhash(task.goal, summary, config.lifecycle.simhash_bits), "x"),
            "run_id": run_id,
            "created_at": now,
            "last_seen_at": now,
            "run_ids": [run_id],
            **fields,
        }
    )


def _nearmiss_steps(commands: Sequence[Step], cap: int, min_progress: float) -> list[tuple[float, Step]]:
    """Steps that raised progress to ``min_progress`` or more, best first, at most ``cap``."""
    best: float = 0.0
    found: list[tuple[float, Step]] = []
    for step in commands:
        p = step.feedback.progress
        if p is None:
            continue
        if p > best and p >= min_progress:
            found.append((p, step))
        best = max(best, p)
    found.sort(key=lambda ps: (-ps[0], ps[1].index))
    return found[:cap]


KeySteps = Callable[[TaskSpec, Sequence[Step], MemoryConfig], list[Step]]
"""An environment plugin's reduction of a claimed run's command steps to those its episodes keep."""


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
    key_steps: KeySteps | None = None,
) -> list[Episode]:
    """The episodes one finished run leaves behind (design.md §6 "Episodes").

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
        key_steps: For a run an environment plugin claims (``plugins.EnvPlugin.episode_steps``): the steps that
            mattered, made general; its episodes are built from those, and a step that made no progress is no
            avoidance (in such an environment it is exploration).

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
    enumerated = key_steps is not None
    if key_steps is not None:
        commands = key_steps(task, commands, config)
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
        for progress, step in _nearmiss_steps(commands, config.lifecycle.nearmiss_cap, config.lifecycle.nearmiss_min_progress):
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
        if len(evs) < config.lifecycle.avoidance_min_repeats or (enumerated and evs[0].channel == "no_progress"):
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
                ttl_episodes=config.lifecycle.avoidance_ttl_episodes,
                success_weight=AVOIDANCE_WEIGHT,
            )
        )
    return out


# --------------------------------------------------------------------------- decay and recall

HOUR = 3600.0
"""Seconds per hour (``episode_half_life_hours`` is in hours, clocks in epoch seconds)."""

RUN_IDS_KEPT = 20
"""Run ids an episode keeps in ``run_ids`` (newest); provenance, not a tunable."""


def episode_strength(ep: Episode, now: float, config: MemoryConfig = DEFAULT_CONFIG) -> float:
    """Strength of ``ep`` at ``now``: its stored strength halved every half-life unused (design.md §6).

    The half-life is ``episode_half_life_hours * (1 + episode_significance_slowdown *
    significance)``, so a significant episode (a task passed with a full score) fades
    several times slower than an ordinary one. Time runs from ``last_seen_at``; a
    clock that goes backwards never strengthens an episode.

    Example:
        >>> ep = Episode(episode_id="e", namespace=("n",), kind="success", goal_signature="g",
        ...              significance=0.0, strength=1.0, last_seen_at=0.0)
        >>> episode_strength(ep, now=72 * 3600.0)
        0.5
        >>> ep.significance = 1.0  # five times the half-life with the default slowdown of 4
        >>> round(episode_strength(ep, now=72 * 3600.0), 3)
        0.871
    """
    dt_hours = max(0.0, now - ep.last_seen_at) / HOUR
    sig = min(1.0, max(0.0, ep.significance))
    half_life = config.lifecycle.episode_half_life_hours * (1.0 + config.lifecycle.episode_significance_slowdown * sig)
    return max(0.0, ep.strength) * 0.5 ** (dt_hours / half_life)


def episode_recallable(ep: Episode, now: float, config: MemoryConfig = DEFAULT_CONFIG) -> bool:
    """Whether retrieval may show ``ep`` at ``now`` (design.md §6 decay; AMM spec TTL).

    Not recallable: a retired episode (its runs' success was denied), an avoidance whose
    TTL has run out (``ttl_episodes == 0``), and any episode whose decayed strength
    (``episode_strength``) is below ``episode_recall_min_strength``. Nothing is deleted:
    a faded episode stays stored, and seeing it again (a merge) restores its strength.
    """
    if ep.retired is not None or (ep.ttl_episodes is not None and ep.ttl_episodes <= 0):
        return False
    return episode_strength(ep, now, config) >= config.lifecycle.episode_recall_min_strength


# --------------------------------------------------------------------------- write policy


EPISODE_COUNTERS = ("count", "last_seen_at", "strength", "significance", "run_ids", "success_weight", "ttl_episodes",
                    "seen_run_seq")
"""The episode fields a sighting changes (``apply_episode_evidence``): folded from evidence, never rewritten by a
content write (``learning.ledger``)."""


@dataclass
class EpisodeWrites:
    """What ``plan_episode_writes`` decided: content to write, sightings to append, and what happened to each new one."""

    upserts: dict[str, Episode] = field(default_factory=dict)
    """Records to write: new episodes, and near-misses replacing weaker ones (under the weaker one's id; the
    caller keeps the stored record's counters, ``EPISODE_COUNTERS``)."""
    sightings: dict[str, EpisodeEvidence] = field(default_factory=dict)
    """Stored episodes the run saw again, by id: evidence the fold adds, never a rewritten record."""
    folded: dict[str, Episode] = field(default_factory=dict)
    """Every stored episode the run changed as the fold will hold it (merged, replaced, aged)."""
    created: list[str] = field(default_factory=list)
    merged: list[tuple[str, str]] = field(default_factory=list)
    """(stored id kept, new episode id merged into it)."""
    capped: list[str] = field(default_factory=list)
    """New near-misses dropped (or folded into the kept one) by the per-(template, context) cap."""
    expired: list[str] = field(default_factory=list)
    """Avoidances whose TTL reached 0 this run."""
    spent: list[str] = field(default_factory=list)
    """Stored avoidances whose TTL was already over (or never counts): the indexed plan's note for its index."""


def episode_hash(ep: Episode, bits: int) -> int:
    """The episode's SimHash as an int: its stored one, recomputed when missing or corrupt (dedup compares these)."""
    try:
        return int(ep.simhash, 16) if ep.simhash else episode_simhash(ep.goal_signature, ep.summary, bits)
    except ValueError:  # a corrupt stored hash: recompute rather than fail
        return episode_simhash(ep.goal_signature, ep.summary, bits)


def apply_episode_evidence(ep: Episode, ev: EpisodeEvidence, config: MemoryConfig = DEFAULT_CONFIG) -> Episode:
    """``ep`` with one piece of evidence folded in: the episodes' fold (``learning.ledger``), design.md §6.

    A sighting (``count`` > 0) adds its count, refreshes last_seen and strength, grows a
    success's weight by the sighting's, keeps a near-miss's larger weight, and restarts an
    avoidance's TTL at ``avoidance_ttl_episodes`` from the sighting's run. Links add the
    episodes named in ``leads_to`` / ``caused_by`` once each, in the order they arrive.
    """
    update: dict[str, object] = {}
    for name in ("leads_to", "caused_by"):
        have: list[str] = getattr(ep, name)
        new = [i for i in getattr(ev, name) if i not in have]
        if new:
            update[name] = [*have, *new]
    if ev.count > 0:
        update.update({
            "count": ep.count + ev.count,
            "last_seen_at": max(ep.last_seen_at, ev.at),
            "strength": 1.0,
            "significance": max(ep.significance, ev.significance),
            "run_ids": list(dict.fromkeys([*ep.run_ids, ev.run_id]))[-RUN_IDS_KEPT:],
            "seen_run_seq": max(ep.seen_run_seq or 0, ev.run_seq),
        })
        if ep.kind == "success":
            update["success_weight"] = ep.success_weight + ev.success_weight  # reused: weight increments
        elif ep.kind == "nearmiss":
            update["success_weight"] = max(ep.success_weight, ev.success_weight)
        else:
            update["ttl_episodes"] = config.lifecycle.avoidance_ttl_episodes
    return ep.model_copy(update=update) if update else ep


def link_evidence(cause_id: str, effect_id: str, *, run_seq: int, at: float) -> tuple[EpisodeEvidence, EpisodeEvidence]:
    """The evidence that episode ``cause_id`` led to ``effect_id``: one piece for each end, keyed by the link.

    ``count`` 0 (no sighting); a retried link is the same key, so it folds once.
    """
    key = f"link:{cause_id}>{effect_id}"
    return (
        EpisodeEvidence(episode_id=cause_id, run_id=key, run_seq=run_seq, at=at, count=0, leads_to=[effect_id]),
        EpisodeEvidence(episode_id=effect_id, run_id=key, run_seq=run_seq, at=at, count=0, caused_by=[cause_id]),
    )


def age_episode(ep: Episode, runs_after: Callable[[int], int]) -> Episode:
    """``ep`` with an avoidance's TTL counted down by the runs stored after the one that last saw it.

    One run is one episode of TTL (AMM spec). Derived, never written: every memory that
    holds the same runs ages an avoidance the same, and no writer decrements a stored
    counter another writer also decrements. ``runs_after(seq)`` counts the runs whose
    sequence number is above ``seq``. A record without ``seen_run_seq`` (written before
    it existed) keeps its stored TTL.
    """
    if ep.kind != "avoidance" or ep.ttl_episodes is None or ep.seen_run_seq is None:
        return ep
    left = max(0, ep.ttl_episodes - runs_after(ep.seen_run_seq))
    return ep if left == ep.ttl_episodes else ep.model_copy(update={"ttl_episodes": left})


def episode_base(ep: Episode) -> Episode:
    """The record a new episode is stored as: its content without the sighting that created it.

    Count 0, no runs, a success's weight not yet gained; the run's first sighting
    (``sighting``) adds them in the fold. Two writers that create the same episode at
    once write the same base and one sighting each, so both count.
    """
    return ep.model_copy(update={
        "count": 0, "run_ids": [], "success_weight": 0.0 if ep.kind == "success" else ep.success_weight,
    })


def sighting(kept: Episode, new: Episode, now: float) -> EpisodeEvidence:
    """The evidence that the run which produced ``new`` saw the stored ``kept`` again."""
    return EpisodeEvidence(
        episode_id=kept.episode_id, run_id=new.run_id or (new.run_ids[-1] if new.run_ids else new.episode_id),
        run_seq=new.seen_run_seq or 0, at=now, count=new.count, success_weight=new.success_weight,
        significance=new.significance,
    )


def add_sighting(out: EpisodeWrites, kept: Episode, ev: EpisodeEvidence) -> None:
    """Two sightings of one episode in one run are one piece of evidence (it is keyed by episode and run)."""
    prev = out.sightings.get(kept.episode_id)
    if prev is not None:
        weight = (prev.success_weight + ev.success_weight if kept.kind == "success"
                  else max(prev.success_weight, ev.success_weight))
        ev = prev.model_copy(update={"count": prev.count + ev.count, "success_weight": weight,
                                     "significance": max(prev.significance, ev.significance)})
    out.sightings[kept.episode_id] = ev


def _find_duplicate(ep: Episode, pool: Sequence[Episode], config: MemoryConfig) -> Episode | None:
    mine = episode_hash(ep, config.lifecycle.simhash_bits)
    best: tuple[int, float, Episode] | None = None
    for other in pool:
        if other.kind != ep.kind or tuple(other.namespace) != tuple(ep.namespace):
            continue
        if other.episode_id == ep.episode_id:
            return other
        dist = hamming(mine, episode_hash(other, config.lifecycle.simhash_bits))
        if dist <= config.lifecycle.episode_dedup_max_hamming and (best is None or (dist, other.created_at) < best[:2]):
            best = (dist, other.created_at, other)
    return None if best is None else best[2]


def write_new(ep: Episode, out: EpisodeWrites, same: Sequence[Episode] | None, stored: Container[str],
              config: MemoryConfig, sight: Callable[[Episode, Episode], Episode]) -> None:
    """Steps 3 and 4 of ``plan_episode_writes`` for a new episode that duplicates none: ``same`` are the near-misses
    its (template, context) holds when it is a near-miss (None otherwise), ``stored`` the ids already stored, and
    ``sight(kept, ep)`` records ``ep`` as a sighting of ``kept``."""
    if same is not None and len(same) >= config.lifecycle.nearmiss_cap:
        out.capped.append(ep.episode_id)
        if not same:  # cap 0: near-misses are off
            return
        weakest = min(same, key=lambda e: (e.success_weight, e.last_seen_at))
        if ep.success_weight > weakest.success_weight:
            content = ep.model_copy(update={"episode_id": weakest.episode_id})
            out.upserts[weakest.episode_id] = content if weakest.episode_id in stored else episode_base(content)
            sight(with_fields(content, weakest, EPISODE_COUNTERS), ep)
        else:
            sight(max(same, key=lambda e: e.success_weight), ep)
        return
    base = episode_base(ep)
    out.upserts[ep.episode_id] = base
    sight(base, ep)  # created: its own first sighting, so two writers creating it both count
    out.created.append(ep.episode_id)


def plan_episode_writes(
    new: Sequence[Episode], stored: Sequence[Episode], config: MemoryConfig = DEFAULT_CONFIG, *, now: float
) -> EpisodeWrites:
    """Apply the episode write policy of design.md §6 to one run's episodes; pure.

    ``stored`` are the namespace's episodes as folded and aged before this run; ``new``
    carry the run's id and sequence number (``run_id``, ``seen_run_seq``).

    1. Every stored live avoidance not seen again loses one episode of TTL (one run is
       one episode); at 0 it expires (``episode_recallable`` is False), never deleted.
       Nothing is written for it: the TTL is derived from the runs (``age_episode``).
    2. A new episode that duplicates a stored one (same id, or same kind within
       ``episode_dedup_max_hamming`` SimHash bits of goal_signature + summary) merges
       into it as a sighting (``apply_episode_evidence``): the stored id is kept, counts
       add, last_seen and strength refresh, a success's weight grows, an avoidance's TTL
       is renewed.
    3. A new near-miss whose (subgoal template, context) already holds ``nearmiss_cap``
       near-misses replaces the weakest of them when it got further (higher
       ``success_weight``), else it is a sighting of the best one.
    4. Anything else is created: its record is the base (``episode_base``) and its own
       first sighting adds the count, so two writers creating it at once both count.

    Args:
        new: Episodes of the run just finished (``episodes_from_run``).
        stored: Every stored episode of the namespace, folded and aged.
        config: Supplies the thresholds.
        now: Current time, epoch seconds.
    """
    out = EpisodeWrites()
    pool: dict[str, Episode] = {e.episode_id: e for e in stored}
    known = set(pool)
    seen: set[str] = set()

    def sight(kept: Episode, ep: Episode) -> Episode:
        ev = sighting(kept, ep, now)
        add_sighting(out, kept, ev)
        folded = apply_episode_evidence(kept, ev, config)
        pool[folded.episode_id] = out.folded[folded.episode_id] = folded
        seen.add(folded.episode_id)
        return folded

    for ep in new:
        dup = _find_duplicate(ep, list(pool.values()), config)
        if dup is not None:
            sight(dup, ep)
            out.merged.append((dup.episode_id, ep.episode_id))
            continue
        same = [
            e for e in pool.values()
            if e.kind == "nearmiss" and (e.subgoal_template, e.context) == (ep.subgoal_template, ep.context)
        ] if ep.kind == "nearmiss" else None
        write_new(ep, out, same, known, config, sight)
    for ep in stored:
        if ep.kind != "avoidance" or ep.episode_id in seen or ep.ttl_episodes is None or ep.ttl_episodes <= 0:
            continue
        ttl = ep.ttl_episodes - 1
        out.folded[ep.episode_id] = ep.model_copy(update={"ttl_episodes": ttl})
        if ttl == 0:
            out.expired.append(ep.episode_id)
    return out


__all__ = [
    "AVOIDANCE_WEIGHT",
    "EPISODE_COUNTERS",
    "OBS_MAX_CHARS",
    "SUCCESS_WEIGHT",
    "SUMMARY_MAX_CHARS",
    "EpisodeWrites",
    "KeySteps",
    "add_sighting",
    "age_episode",
    "apply_episode_evidence",
    "episode_base",
    "episode_hash",
    "link_evidence",
    "episode_recallable",
    "episode_simhash",
    "episode_strength",
    "episodes_from_run",
    "goal_template",
    "plan_episode_writes",
    "sighting",
    "write_new",
]
