"""ODSum-Story as the odmds benchmarks use it: the full 1,190-chapter corpus (the 52 empty chapters
are left out: nothing can retrieve them) as documents, and the 125 dev queries with their gold
chapters (every non-empty chapter of the query's story) and 4 reference summaries."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


SPLITS = ("documents_dev", "documents_train_corpus", "documents_test_corpus")


@dataclass
class StoryQuery:
    id: str
    question: str
    story: str
    gold: frozenset[str]
    references: list[str]


def load(root: str | Path):
    """(documents, queries). Document ids are ``<split>:<story>:<chapter>``; metadata carries the
    ``story`` id and the ``chapter`` number (for the optional consecutive-chapter edges)."""
    from citegraph.state import Document

    root = Path(root)
    docs, by_story, titles = [], {}, {}
    for split in SPLITS:
        for s, line in enumerate((root / f"{split}.jsonl").read_text().splitlines()):
            rec = json.loads(line)
            story = f"{split.split('_')[1]}:{s}"
            titles[story] = rec["title"]
            for c, text in enumerate(rec["divided_document"]):
                if not text.strip():
                    continue
                doc_id = f"{story}:{c}"
                docs.append(Document(id=doc_id, title=rec["title"], text=text,
                                     metadata={"story": story, "chapter": c}))
                by_story.setdefault(story, set()).add(doc_id)
    queries = []
    for s, line in enumerate((root / "queries_dev.jsonl").read_text().splitlines()):
        story = f"dev:{s}"
        for q in json.loads(line):
            queries.append(StoryQuery(id=f"{story}:q{q['question_number']}", question=q["question_text"], story=story,
                                      gold=frozenset(by_story[story]),
                                      references=[r["response_text"] for r in q["responses"]]))
    return docs, queries


def distinct_documents(doc_ids, k: int) -> list[str]:
    """The first ``k`` distinct documents of a ranked chunk list (a chunk hit counts for its chapter)."""
    out: list[str] = []
    for d in doc_ids:
        if d not in out:
            out.append(d)
            if len(out) == k:
                break
    return out


def chroma_embed_fn(corpus):
    """Embeddings of the indexed chunks, read back from the index (``Corpus.embeddings``; embedding
    ~4,000 chunks again costs ~10 minutes on this machine), in ``corpus.chunks()`` order."""
    ids = [c.id for c in corpus.chunks()]

    def fn(texts):
        return corpus.embeddings(ids)

    fn.from_index = True
    return fn
