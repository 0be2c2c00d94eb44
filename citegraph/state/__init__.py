"""Typed state: the shared answer contract plus each graph's state and Context."""

from citegraph.state.answer import AttributedAnswer, CitedSentence, Document, Evidence

__all__ = ["AttributedAnswer", "CitedSentence", "Document", "Evidence"]
