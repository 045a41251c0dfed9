"""``langmem-plus report --store``: a real memory's lessons, folds, timeline, runs and unanswered mistakes, read by
``report_store`` and drawn on a page a real headless Chromium renders without a console error."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from test_report import CHROMIUM_FLAGS, CHROMIUM_TIMEOUT_S, PNG_MAGIC, _chromium

from langmem_plus import LearningMemory
from langmem_plus.cli import main
from langmem_plus.config import MemoryConfig
from langmem_plus.records import Activation, Feedback, Lesson, Step, TaskSpec, Verdict
from langmem_plus.report_store import StorePage, read_page, unanswered_mistakes
from langmem_plus.report_store_page import (
    STORE_PLOTS,
    plot_lessons_by_tool,
    render_store_html,
    write_store_report,
)

NS = ("acme", "grid")
CFG = MemoryConfig.model_validate({"lifecycle": {"min_occurrences": 3}})
"""An avoidance waits for a third run of its mistake, so a mistake of two runs is one no lesson answers yet."""
FILTER_ERROR = "unknown command 'filter' at stage 2"
MEDIAN_ERROR = "unknown function 'median' at stage 3"
HARMFUL = "les_harm"


def _fail(i: int, action: str, error: str, applied: tuple[str, ...] = ()) -> Step:
    return Step(index=i, action=action, tool="gridtool", feedback=Feedback(hard_failure=True, error_text=error),
                info={"applied_hints": list(applied)})


def _ok(i: int, action: str) -> Step:
    return Step(index=i, action=action, tool="gridtool", feedback=Feedback(reward=1.0, progress=1.0))


def _run(mem: LearningMemory, run_id: str, steps: list[Step], *, shown: tuple[str, ...] = (), passed: bool = True) -> None:
    task = TaskSpec(task_id=f"task-{run_id}", goal="the people over 30", tool="gridtool", family="filter")
    events = [e for e in (mem.capture(s, run_id=run_id, task=task) for s in steps) if e is not None]
    mem.end_run(run_id=run_id, task=task, steps=steps, events=events, verdict=Verdict(passed=passed, score=float(passed)),
                activations=[Activation(lesson_id=l, run_id=run_id, step=0, moment="pre_run") for l in shown])


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A memory that learned a fix and promoted it, imported a harmful rule and suppressed it, and met a mistake
    twice that it has no lesson for yet."""
    root = tmp_path_factory.mktemp("store")
    mem = LearningMemory.open(root, namespace=NS, config=CFG)
    try:
        wrong, right = "LOAD people | filter age >= 30", "LOAD people | KEEP age >= 30"
        for k in (1, 2):  # the mistake and its fix: a lesson, then the same lesson learned again
            _run(mem, f"r{k}", [_fail(0, wrong, FILTER_ERROR), _ok(1, right)])
        (fix,) = mem.list_lessons()
        for k in (3, 4, 5):  # shown, and the mistake is gone: promoted
            _run(mem, f"r{k}", [_ok(0, right)], shown=(fix.id,))
        mem.add_lessons([Lesson(id=HARMFUL, namespace=NS, rule_text="WRONG: KEEP -> CORRECT: filter", wrong="KEEP",
                                correct="filter", triggers=fix.triggers, status="promoted", reliability=0.9)])
        _run(mem, "r6", [_fail(0, wrong, FILTER_ERROR, applied=(HARMFUL,)), _ok(1, right)], shown=(HARMFUL,))
        for k in (7, 8):  # a mistake without a fix, in two runs
            _run(mem, f"r{k}", [_ok(0, right), _fail(1, f"{right} | median(age)", MEDIAN_ERROR)], passed=False)
    finally:
        mem.close()
    return root


@pytest.fixture(scope="module")
def page(store: Path) -> StorePage:
    with LearningMemory.open(store, namespace=NS, config=CFG) as mem:
        return read_page(mem)


def test_the_lessons_are_listed_by_status_and_tool(page: StorePage) -> None:
    assert page.by_status == {"candidate": 0, "promoted": 1, "suppressed": 1, "archived": 0}
    assert page.by_tool == {"gridtool": {"candidate": 0, "promoted": 1, "suppressed": 0, "archived": 0},
                            "(any tool)": {"candidate": 0, "promoted": 0, "suppressed": 1, "archived": 0}}
    assert [(l.status, l.rule.split(" (when")[0]) for l in page.lessons] == [
        ("promoted", "WRONG: filter -> CORRECT: KEEP"), ("suppressed", "WRONG: KEEP -> CORRECT: filter")]


def test_each_lessons_figures_are_the_fold_of_its_evidence(store: Path, page: StorePage) -> None:
    with LearningMemory.open(store, namespace=NS, config=CFG) as mem:
        lessons = {l.id: l for l in mem.list_lessons()}
    fix = next(l for l in lessons.values() if l.status == "promoted")
    points = page.folds[fix.id]
    measured = [p for p in points if p.utility is not None]
    assert [p.run_id for p in measured] == ["r3", "r4", "r5"] and all(p.utility > 0 for p in measured)  # type: ignore[operator]
    assert [p.status for p in measured] == ["candidate", "candidate", "promoted"]
    for lesson_id, lesson in lessons.items():  # the replay ends where the memory's own fold is
        assert page.folds[lesson_id][-1].status == lesson.status
        assert page.folds[lesson_id][-1].reliability == pytest.approx(lesson.reliability)
    harm = page.folds[HARMFUL][-1]
    assert harm.run_id == "r6" and harm.utility is not None and harm.utility < 0


def test_the_timeline_has_the_promotion_the_suppression_and_the_merge(page: StorePage) -> None:
    kinds = [(e.kind, e.run_seq) for e in page.timeline]
    assert ("lesson_created", 1) in kinds and ("merge", 2) in kinds and ("promoted", 5) in kinds
    assert ("lesson_imported", None) in kinds and ("suppressed", 6) in kinds
    promoted = next(e for e in page.timeline if e.kind == "promoted")
    assert promoted.what.startswith("candidate -> promoted: promote: mean utility")
    assert [e.kind for e in page.timeline].index("promoted") < [e.kind for e in page.timeline].index("suppressed")  # log order


def test_runs_carry_their_errors_and_activations(page: StorePage) -> None:
    assert [r.run_id for r in page.runs] == [f"r{k}" for k in range(1, 9)]
    by_id = {r.run_id: r for r in page.runs}
    assert by_id["r1"].errors == (FILTER_ERROR,) and by_id["r1"].activated == ()
    assert by_id["r6"].activated == (HARMFUL,) and by_id["r7"].errors == (MEDIAN_ERROR,) and not by_id["r7"].passed


def test_a_recurring_mistake_no_lesson_answers_is_listed(page: StorePage) -> None:
    (mistake,) = page.mistakes  # the filter mistake has its promoted fix; the median one has nothing yet
    assert mistake.fingerprint == "unknown function <str> at stage <n>"
    assert (mistake.runs, mistake.occurrences, mistake.last_seq, mistake.tools) == (2, 2, 8, ("gridtool",))
    assert mistake.example_error == MEDIAN_ERROR and "median(age)" in mistake.example_action


def test_a_mistake_only_dropped_lessons_answer_is_unanswered() -> None:
    from langmem_plus.records import FailureNote, RunRecord

    runs = [RunRecord(run_id=f"r{i}", namespace=NS, seq=i, task_id="t", fingerprint_counts={"fp": 2},
                      failures=[FailureNote(fp="fp", error="boom")]) for i in (1, 2, 3)]
    live = Lesson(id="live", namespace=NS, rule_text="r", triggers=["fp"], status="candidate")
    dropped = live.model_copy(update={"id": "gone", "status": "suppressed"})
    assert unanswered_mistakes(runs, [live, dropped]) == []
    (m,) = unanswered_mistakes(runs, [dropped])
    assert (m.runs, m.occurrences, m.dropped, m.fingerprint) == (3, 6, ("gone",), "boom")
    assert unanswered_mistakes(runs[:1], []) == []  # one run is no recurrence


def test_text_from_tools_and_models_is_escaped(page: StorePage) -> None:
    from dataclasses import replace

    evil = "<script>alert('x')</script> $\\frac{a}{b}$"
    lessons = [replace(page.lessons[0], rule=evil, tool=evil)]
    tools = {evil: dict(page.by_tool["gridtool"])}
    text = render_store_html(replace(page, lessons=lessons, by_tool=tools), {})
    assert "<script>alert" not in text and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in text
    plot_lessons_by_tool(replace(page, by_tool=tools))  # a `$` in a label is no mathematics error


def test_the_page_renders_in_headless_chromium_without_console_errors(page: StorePage, tmp_path: Path) -> None:
    exe = _chromium()
    index = write_store_report(page, tmp_path / "out")
    for name in STORE_PLOTS:
        assert (tmp_path / "out" / f"{name}.png").read_bytes().startswith(PNG_MAGIC)
    text = index.read_text()
    assert text.count("data:image/png;base64,") == len(STORE_PLOTS)
    assert not re.search(r"""(src|href)=['"](https?:|//)""", text)  # nothing fetched from elsewhere
    url, shot = index.resolve().as_uri(), tmp_path / "shot.png"
    dom = subprocess.run(  # one launch: the DOM after the page's script ran, the console log, and a screenshot
        [exe, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
         "--virtual-time-budget=10000", "--window-size=1200,2400", f"--screenshot={shot}", "--dump-dom", url],
        capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT_S, check=True,
    )
    assert re.search(r'id="render-check" data-loaded="(\d+)"', dom.stdout).group(1) == str(len(STORE_PLOTS))  # type: ignore[union-attr]
    assert "WRONG: filter -&gt; CORRECT: KEEP" in dom.stdout and "unknown function &lt;str&gt; at stage &lt;n&gt;" in dom.stdout
    assert [line for line in dom.stderr.splitlines() if ":CONSOLE" in line] == []  # chromium logs every console message
    from PIL import Image

    assert shot.read_bytes().startswith(PNG_MAGIC)
    with Image.open(shot) as img:
        colors = img.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colors is None or len(colors) > 50  # a blank page has one or two colours


def test_cli_reports_a_store_with_progress_on_stderr(store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rep"
    assert main(["report", "--store", str(store), "--namespace", "acme/grid", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == str(out / "index.html")
    assert f"report: opening {store} namespace acme/grid" in captured.err
    assert "report: lessons 2/2" in captured.err and "report: plots 3/3" in captured.err
    assert "WRONG: filter -&gt; CORRECT: KEEP" in (out / "index.html").read_text()


@pytest.mark.parametrize("argv", [["--out", "x"], ["--from", "r.json", "--store", "s", "--out", "x"]], ids=["none", "both"])
def test_cli_report_needs_exactly_one_source(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", *argv]) == 2
    assert "exactly one source: --from RESULT.json (a bench result) or --store PATH / --url URL" in capsys.readouterr().err


def test_an_empty_memory_gets_a_page_that_says_so(tmp_path: Path) -> None:
    empty = StorePage(namespace=NS, lessons=[], by_status={}, by_tool={}, folds={}, timeline=[], runs=[], mistakes=[])
    text = write_store_report(empty, tmp_path / "out").read_text()
    assert text.count("data:image/png;base64,") == len(STORE_PLOTS)
    assert "No lessons yet." in text and "No runs yet." in text and "No events yet." in text
