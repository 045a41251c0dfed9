"""Writes a store as langmem_plus at commit c58a40b writes it: two text-game runs whose records keep the
commands offered, the verbs the recipe directed, an undo pair and a consuming command."""
import sys
from langmem_plus import LearningMemory, Trajectory
from langmem_plus.demo import LogicalClock
from langmem_plus.records import Feedback, Step, TaskSpec, Verdict

path = sys.argv[1]
GOAL = "Cook a meal. Check the cookbook for the recipe."
RECIPE = "Ingredients:\n  carrot\nDirections:\n  slice the carrot\n  prepare meal"
VALID0 = ["open fridge", "read cookbook", "take carrot", "look"]
memory = LearningMemory.open(path, namespace=("t", "v0"), clock=LogicalClock(1.7e9))
for n in range(2):
    task = TaskSpec(task_id=f"g{n}", goal=GOAL, tool="twx-cooking", domain="text-game", family="cooking",
                    context={"goal": GOAL, "observation": "A kitchen.", "valid_actions": VALID0})
    steps = [
        Step(index=0, action="open fridge", observation="You open the fridge. You see a milk.",
             info={"valid_actions": ["close fridge", "read cookbook", "take carrot", "take milk", "look"]}),
        Step(index=1, action="close fridge", observation="You close the fridge.", info={"valid_actions": VALID0}),
        Step(index=2, action="read cookbook", observation=RECIPE,
             info={"valid_actions": ["take carrot", "slice carrot", "eat carrot", "look"]}),
        Step(index=3, action="take carrot", observation="You take the carrot.", feedback=Feedback(reward=0.5, progress=0.5),
             info={"valid_actions": ["slice carrot", "eat carrot", "look", "open fridge", "read cookbook"]}),
        Step(index=4, action="eat carrot", observation="You eat the carrot.", feedback=Feedback(progress=0.5),
             info={"valid_actions": ["look", "open fridge", "read cookbook"]}),
    ]
    memory.general_update(Trajectory(task=task, steps=steps, verdict=Verdict(passed=False, score=0.5), run_id=f"run{n}"))
for r in memory.runs:
    print(r.run_id, r.commands, r.directed, r.undone, r.consumed)
print(len(memory.list_lessons()), "lessons")
memory.close()
