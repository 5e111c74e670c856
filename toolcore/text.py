"""Plain-text helpers the stages and the runtime share."""

from __future__ import annotations

import unicodedata


def fold_accents(text: str) -> str:
    """`text` with its letters' accents dropped ("Zürich" -> "Zurich", "Köln" -> "Koln"); other
    characters stay as they are (NFKD also splits ligatures and compatibility forms: "ﬁ" -> "fi")."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))
