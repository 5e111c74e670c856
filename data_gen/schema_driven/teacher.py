"""An optional teacher: any OpenAI-compatible endpoint rewrites a generated request into more natural
language, through the official `openai` client (`pip install openai`).

The teacher only ever sees the request text and the values that must survive; it never decides a
call. Its rewrite is kept only when the very same calls still follow from it (`episodes.check` on
the new text: every value said, in the same or a documented form) and it passes decontamination;
otherwise the original wording stays. Every outcome is counted (`teacher:accepted`,
`teacher:rejected:<reason>`, `teacher:error:<kind>`) and lands in the manifest.
"""

from __future__ import annotations

import os
import re
from typing import Any

from toolcore.errors import ToolkitError

from .config import TeacherConfig

SYSTEM = ("You rewrite requests that a user sends to an assistant so they sound like a real person wrote them. "
          "Keep the meaning. Keep every listed value exactly as written (same spelling, digits and case). "
          "Add nothing the user did not ask for. Answer with the rewritten request only, one line.")
MAX_CHARS = 400


class Teacher:
    def __init__(self, cfg: TeacherConfig):
        try:
            import openai
        except ImportError as e:
            raise ToolkitError("the teacher needs the openai client", field="schema_data.teacher.url",
                               fix="pip install openai, or leave schema_data.teacher.url empty") from e
        self.cfg = cfg
        self.client = openai.OpenAI(base_url=cfg.url, api_key=os.environ.get(cfg.api_key_env) or "not-needed",
                                    timeout=cfg.timeout, max_retries=0)
        self.errors: tuple[type[BaseException], ...] = (openai.OpenAIError,)

    def rewrite(self, text: str, keep: list[str]) -> tuple[str | None, str]:
        """(rewritten text, "") or (None, the error kind)."""
        prompt = f"Request: {text}\nValues to keep exactly: {'; '.join(keep) or '(none)'}"
        try:
            reply = self.client.chat.completions.create(
                model=self.cfg.model, temperature=self.cfg.temperature, max_tokens=self.cfg.max_tokens,
                messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}])
        except self.errors as e:
            return None, type(e).__name__
        content: Any = reply.choices[0].message.content if reply.choices else None
        if not isinstance(content, str):
            return None, "empty"
        return clean(content), ""


def clean(reply: str) -> str:
    """One line, without the quotes or "Rewritten request:" labels models like to add."""
    line = next((ln.strip() for ln in reply.strip().splitlines() if ln.strip()), "")
    line = re.sub(r"^(rewritten( request)?|request)\s*:\s*", "", line, flags=re.I)
    if len(line) > 1 and line[0] == line[-1] and line[0] in "\"'":
        line = line[1:-1]
    return line.strip()
