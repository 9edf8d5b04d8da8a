"""A chat client for any OpenAI-compatible endpoint (through the `openai` SDK), with what a long
run needs: a timeout per call, retries with exponential backoff and jitter on the errors worth
retrying, a token ledger by role, and a record of every exchange so that a resumed run replays
the replies it already paid for instead of asking again.

Configuration: ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and a model name (``--model`` or
``ARGUS_LLM_MODEL``).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import LLMError


@dataclass
class Ledger:
    """Tokens and calls by role (planner, lowering, icrl)."""

    roles: dict[str, dict[str, float]] = field(default_factory=dict)

    def add(self, role: str, prompt: int, completion: int, seconds: float, replayed: bool = False) -> None:
        entry = self.roles.setdefault(role, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0,
                                             "replayed": 0})
        entry["calls"] += 1
        entry["prompt_tokens"] += prompt
        entry["completion_tokens"] += completion
        entry["seconds"] += seconds
        entry["replayed"] += int(replayed)

    def total(self) -> int:
        return int(sum(e["prompt_tokens"] + e["completion_tokens"] for e in self.roles.values()))

    def snapshot(self) -> dict[str, Any]:
        return {role: dict(entry) for role, entry in self.roles.items()}


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    api_key: str
    model: str
    timeout_s: float = 120.0
    retries: int = 3

    @classmethod
    def from_environment(cls, model: str | None = None, base_url: str | None = None, api_key: str | None = None,
                         timeout_s: float = 120.0, retries: int = 3) -> Endpoint:
        url = base_url or os.environ.get("OPENAI_BASE_URL")
        if not url:
            raise LLMError("the llm planner needs an endpoint: set OPENAI_BASE_URL (and OPENAI_API_KEY), or use "
                           "--planner search")
        name = model or os.environ.get("ARGUS_LLM_MODEL")
        if not name:
            raise LLMError("the llm planner needs a model name: --model NAME or ARGUS_LLM_MODEL")
        return cls(url, api_key or os.environ.get("OPENAI_API_KEY") or "none", name, timeout_s, retries)


class Client:
    def __init__(self, endpoint: Endpoint, record: Path | None = None, sleep: Any = time.sleep) -> None:
        try:
            from openai import OpenAI
        except ImportError as err:  # pragma: no cover - a declared dependency
            raise LLMError("the llm planner needs the openai package: pip install openai") from err
        self.endpoint = endpoint
        self.sdk = OpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key, max_retries=0,
                          timeout=endpoint.timeout_s)
        self.ledger = Ledger()
        self.record = record
        self.sleep = sleep
        self.replies: dict[str, str] = {}
        if record is not None and record.is_file():
            for line in record.read_text(errors="replace").splitlines():
                try:
                    item = json.loads(line)
                except (ValueError, RecursionError):
                    continue  # a line cut short by a kill
                if isinstance(item, dict) and isinstance(item.get("key"), str) and isinstance(item.get("reply"), str):
                    self.replies[item["key"]] = item["reply"]

    def chat(self, role: str, messages: list[dict[str, str]], *, call: str = "", temperature: float = 0.2) -> str:
        """The reply to `messages`; `call` names the exchange in the run (its round), so that only
        the same exchange of the same round is replayed from the record, never an earlier round's."""
        key = hashlib.sha256(json.dumps([self.endpoint.model, temperature, call, role, messages]).encode()).hexdigest()
        if key in self.replies:
            self.ledger.add(role, 0, 0, 0.0, replayed=True)
            return self.replies[key]
        from openai import (
            APIConnectionError,
            APIStatusError,
            APITimeoutError,
            InternalServerError,
            RateLimitError,
        )

        failures = []
        for attempt in range(self.endpoint.retries + 1):
            started = time.monotonic()
            try:
                response = self.sdk.chat.completions.create(model=self.endpoint.model, messages=messages,  # type: ignore[arg-type]
                                                            temperature=temperature, timeout=self.endpoint.timeout_s)
            except (APITimeoutError, APIConnectionError, RateLimitError, InternalServerError) as err:
                failures.append(f"attempt {attempt + 1}: {type(err).__name__}: {err}")
                if attempt < self.endpoint.retries:
                    self.sleep(min(30.0, 0.5 * 2 ** attempt) * (0.5 + random.random()))
                continue
            except APIStatusError as err:
                raise LLMError(f"the endpoint refused the request ({err.status_code}): {err.message}") from None
            seconds = time.monotonic() - started
            if not response.choices or response.choices[0].message.content is None:
                failures.append(f"attempt {attempt + 1}: a reply with no text")
                continue
            text = response.choices[0].message.content
            usage = response.usage
            self.ledger.add(role, getattr(usage, "prompt_tokens", 0) or 0, getattr(usage, "completion_tokens", 0) or 0,
                            seconds)
            self._remember(key, role, text, usage)
            return text
        raise LLMError(f"no reply from {self.endpoint.base_url} after {self.endpoint.retries + 1} attempt(s): "
                       + "; ".join(failures))

    def _remember(self, key: str, role: str, reply: str, usage: Any) -> None:
        self.replies[key] = reply
        if self.record is None:
            return
        item = {"key": key, "role": role, "reply": reply,
                "usage": {"prompt_tokens": getattr(usage, "prompt_tokens", 0),
                          "completion_tokens": getattr(usage, "completion_tokens", 0)}}
        with open(self.record, "a") as f:
            f.write(json.dumps(item) + "\n")
            f.flush()
            os.fsync(f.fileno())
