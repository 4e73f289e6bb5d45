"""rankkit: rank candidate answers with an LLM as the judge, and compare ranking strategies fairly.

The public Python API in one place (heavy backends such as torch load only when a judge needs them)::

    from rankkit import load_tasks, make_judge, make_strategy, run
"""

from rankkit.tasks import Candidate, Task, TaskFormatError, load_tasks

__version__ = "0.1.0"

__all__ = ["Candidate", "Task", "TaskFormatError", "load_tasks", "make_judge", "make_strategy", "run",
           "JudgmentCache", "MatchGraph", "__version__"]


def __getattr__(name: str):
    # Lazy re-exports keep `import rankkit` light (no scipy/networkx until they are used).
    if name == "make_judge":
        from rankkit.judges import make_judge
        return make_judge
    if name == "make_strategy":
        from rankkit.strategies import make_strategy
        return make_strategy
    if name == "run":
        from rankkit.runner import run
        return run
    if name == "JudgmentCache":
        from rankkit.cache import JudgmentCache
        return JudgmentCache
    if name == "MatchGraph":
        from rankkit.matches import MatchGraph
        return MatchGraph
    raise AttributeError(f"module 'rankkit' has no attribute {name!r}")
