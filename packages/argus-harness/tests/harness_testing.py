"""Helpers of the harness tests: the small GEMM task and its recipe, and the script an
OpenAI-compatible test server replays."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from argus.harness import TemplateRecipe, extract_candidate

DATA = Path(__file__).parent / "data"


def gemm_template() -> str:
    return (DATA / "tiled_gemm.py").read_text()


def gemm_candidate() -> str:
    """The tiled GEMM in the candidate format (what a model is asked to write)."""
    return extract_candidate(gemm_template(), "gemm").text


def tile_recipe() -> TemplateRecipe:
    """The test recipe: the tiled GEMM's tile shape as parameters."""
    return TemplateRecipe("tile-shape", "GEMM tile shape", gemm_template(),
                          {"BM": (16, 32), "BN": (16, 32), "BK": (4, 8)}, families=("gemm",),
                          summary="choose the block tile of C and the K slice", constraints=("M % BM == 0",))


class Script:
    """Replies by role (the prompt's ``argus-prompt: ROLE/...`` line): each call takes the next
    reply of its role; a reply may be a callable of the request (to look at what was sent) or
    ("stall", seconds, reply) to answer late."""

    def __init__(self, replies: dict[str, list[Any]]) -> None:
        self.replies = {role: list(items) for role, items in replies.items()}
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def answer(self, request: dict[str, Any]) -> tuple[str, float]:
        system = request["messages"][0]["content"]
        role = system.split("argus-prompt: ", 1)[1].split("/", 1)[0] if "argus-prompt: " in system else "?"
        with self.lock:
            self.requests.append({"role": role, **request})
            queue = self.replies.get(role) or []
            item = queue.pop(0) if queue else None
        if item is None:
            return json.dumps({"error": f"no scripted reply left for {role}"}), 0.0
        delay = 0.0
        if isinstance(item, tuple) and item[0] == "stall":
            _, delay, item = item
        if callable(item):
            item = item(request)
        return item, delay

    def sent(self, role: str) -> list[str]:
        """The user messages sent for `role`, in order."""
        return [r["messages"][-1]["content"] for r in self.requests if r["role"] == role]


