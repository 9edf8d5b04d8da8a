"""argus.harness: the optimization loop of Argus (§6 of the paper).

A task (a reference and optionally an initial kernel) goes through rounds of planner ->
selector -> lowering agent -> validator; the fastest kernel that compiles, proves its
invariants and passes the tests on fresh inputs is kept; the planner learns in context after
each round. Planners are plugins (``argus.planners``): ``llm`` for any OpenAI-compatible
endpoint, ``search`` offline. From a shell: ``argus optimize TASK --target T --out DIR``.

    from argus.harness import load_task, Validator, Optimizer, RunStore
"""

from __future__ import annotations

from .candidate import Candidate, Parameter, parse_candidate
from .errors import CandidateError, HarnessError, LLMError, PlannerError, StoreError, TaskError
from .extract import extract_candidate
from .kb import Recipe, RecipeBook, TemplateRecipe
from .loop import Optimizer
from .planning import Observation, Plan, PlannerConfig, PlannerPlugin, PolicyUpdate, Proposal, planner_plugin
from .reward import Reward, reward
from .sandbox import Limits
from .store import RunStore
from .task import Task, load_task
from .validator import Validation, Validator

__all__ = [
    "Candidate", "CandidateError", "HarnessError", "LLMError", "Limits", "Observation", "Optimizer", "Parameter",
    "Plan", "PlannerConfig", "PlannerError", "PlannerPlugin", "PolicyUpdate", "Proposal", "Recipe", "RecipeBook",
    "Reward", "RunStore", "StoreError", "Task", "TaskError", "TemplateRecipe", "Validation", "Validator",
    "extract_candidate", "load_task", "parse_candidate", "planner_plugin", "reward",
]
