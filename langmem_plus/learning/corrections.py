"""A run's verdict corrected: the evidence that restates what the run said about each lesson, and what it retires.

Evidence is never rewritten. A correction is new evidence about the same (lesson, run): it restates the run's utility
(computed again from the parts it was measured from, ``utility.utility_from``), its pass, and voids the conflict
losses the run counted (a contest decided under the denied feedback); the fold reads it in the run's own place
(``ledger.restate_corrections``). Success episodes that stand only on runs now failed are retired, and so are the
skills built only on retired episodes. Pure: records in, records out.

Example:
    >>> from langmem_plus.records import RunEvidence, UtilityParts, Verdict
    >>> said = RunEvidence(lesson_id="l", run_id="r1", run_seq=3, at=1.0, shown=1, utility=0.9, passed=True,
    ...                    parts=UtilityParts(error_reduction=1.0, judged=True))
    >>> [fix] = corrections([("l", said)], Verdict(passed=False), run_id="r1", seq=9, now=2.0, known=lambda l: 0)
    >>> fix.run_id, fix.corrects, fix.utility, fix.passed
    ('r1~c1', 'r1', -1.0, False)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.learning.utility import utility_from
from langmem_plus.records import Episode, RunEvidence, RunRecord, Skill, Verdict


def corrections(
    said: Iterable[tuple[str, RunEvidence]], verdict: Verdict, *, run_id: str, seq: int, now: float,
    known: Callable[[str], int], config: MemoryConfig = DEFAULT_CONFIG,
) -> list[RunEvidence]:
    """One correction per lesson the run said something measurable about (``said``: lesson id, its evidence as
    folded); ``known(lesson_id)`` is how many corrections of this run the lesson has already, so each has its key."""
    out: list[RunEvidence] = []
    for lesson_id, ev in said:
        if ev.utility is None and not ev.shown and not ev.conflict_losses:
            continue
        utility = utility_from(ev.parts, verdict, config) if ev.parts is not None else ev.utility
        out.append(RunEvidence(lesson_id=lesson_id, run_id=f"{run_id}~c{known(lesson_id) + 1}", run_seq=seq, at=now,
                               corrects=run_id, utility=utility, passed=verdict.passed, parts=ev.parts))
    return out


def _runs_of(episode: Episode) -> set[str]:
    return set(episode.run_ids) or ({episode.run_id} if episode.run_id else set())


def retired_by(
    run: RunRecord, runs: Sequence[RunRecord], episodes: Iterable[Episode], skills: Iterable[Skill]
) -> tuple[list[Episode], list[Skill]]:
    """The success episodes that ``run``'s corrected record (a failure now) leaves standing on failed runs only, and
    the skills whose every episode is then retired: each retired, with the reason."""
    if run.passed:
        return [], []
    failed = {r.run_id for r in runs if not r.passed} | {run.run_id}
    all_episodes = list(episodes)
    why = f"the success of the runs it came from was denied (run {run.run_id} corrected)"
    retired = [e.model_copy(update={"retired": why}) for e in all_episodes
               if e.kind == "success" and e.retired is None and run.run_id in _runs_of(e) and _runs_of(e) <= failed]
    gone = {e.episode_id for e in retired} | {e.episode_id for e in all_episodes if e.retired}
    why_skill = f"every episode it was built on was retired (run {run.run_id} corrected)"
    dropped = [s.model_copy(update={"retired": why_skill}) for s in skills
               if s.retired is None and s.source_episodes and set(s.source_episodes) <= gone]
    return retired, dropped


__all__ = ["corrections", "retired_by"]
