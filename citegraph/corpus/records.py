"""What reading a corpus yields: a :class:`SourceDoc` per document, a :class:`BadLine` per line or file
that is not one (with the reason), read by :mod:`citegraph.corpus.sources` and :mod:`citegraph.corpus.pdf`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class SourceDoc:
    id: str
    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    path: str = ""  # where it was read: the file, and the line (0 for a whole file or a document given in code)
    line: int = 0
    size: int = 0  # bytes of its source line or file (0 when given in code)
    notes: list[str] = field(default_factory=list)  # what reading it left out (a PDF's pages without text)

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}" if self.line else (self.path or "a document given in code")


@dataclass
class BadLine:
    path: str
    line: int
    reason: str
    size: int = 0

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"
