"""Memory designs behind one small interface, and their two-phase evaluation.

``base`` holds the interface (``MemoryDesign``: ``general_update`` /
``general_retrieve`` returning a ``Context``) and the shared episode loop;
``baselines`` the compared designs; ``evaluation`` the collection / deployment
(static, dynamic) harness with repeats, mean and standard error.
"""

from langmem_plus.bench.designs.base import Context, MemoryDesign, run_episode
from langmem_plus.bench.designs.baselines import DESIGN_NAMES, make_design
from langmem_plus.bench.designs.evaluation import evaluate_designs, split_tasks

__all__ = ["DESIGN_NAMES", "Context", "MemoryDesign", "evaluate_designs", "make_design", "run_episode", "split_tasks"]
