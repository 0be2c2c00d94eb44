"""The corpus layer: chunk a document collection, index it in Chroma (dense) and bm25s (sparse), and
search it by BM25, by embeddings, or both fused. Every graph can retrieve from it (the ``corpus`` knob);
it plugs into LangChain both ways.

    from citegraph.corpus import build_index, open_corpus
    build_index("papers.jsonl", "idx/")
    hits = open_corpus("idx/").search("query", k=10, mode="hybrid", alpha=0.5)

``open_corpus(spec, documents=None)`` is the one door every node and command opens a corpus through
(:mod:`citegraph.corpus.registry`).
"""

from citegraph.corpus.chunking import Chunk, Chunker, Hit
from citegraph.corpus.index import (MODES, Corpus, IndexedDoc, IndexReport, RemoveReport, add_to_index, build_index,
                                   list_documents, remove_from_index)
from citegraph.corpus.registry import (
    forget_opened,
    open_corpus,
    register_corpus,
    register_retriever,
    unregister_corpus,
    unregister_retriever,
)
from citegraph.corpus.retrievers import CorpusRetriever, RetrieverCorpus
from citegraph.corpus.sources import BadLine, SourceDoc, iter_corpus

__all__ = [
    "Corpus", "Chunk", "Chunker", "Hit", "IndexReport", "MODES", "build_index", "add_to_index",
    "CorpusRetriever", "RetrieverCorpus", "register_corpus", "unregister_corpus", "register_retriever",
    "unregister_retriever", "open_corpus", "forget_opened", "BadLine", "SourceDoc", "iter_corpus",
    "IndexedDoc", "RemoveReport", "list_documents", "remove_from_index",
]
