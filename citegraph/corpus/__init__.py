"""The corpus layer: chunk a document collection, index it in Chroma (dense) and bm25s (sparse), and
search it by BM25, by embeddings, or both fused. Every graph can retrieve from it (the ``corpus`` knob);
it plugs into LangChain both ways.

    from citegraph.corpus import Corpus, build_index
    build_index("papers.jsonl", "idx/")
    hits = Corpus.open("idx/").search("query", k=10, mode="hybrid", alpha=0.5)
"""

from citegraph.corpus.chunking import Chunk, Chunker
from citegraph.corpus.index import MODES, Corpus, Hit, IndexReport, add_to_index, build_index
from citegraph.corpus.retrievers import (
    CorpusRetriever,
    RetrieverCorpus,
    forget_opened,
    open_corpus,
    register_retriever,
    unregister_retriever,
)
from citegraph.corpus.sources import BadLine, SourceDoc, iter_corpus

__all__ = [
    "Corpus", "Chunk", "Chunker", "Hit", "IndexReport", "MODES", "build_index", "add_to_index",
    "CorpusRetriever", "RetrieverCorpus", "register_retriever", "unregister_retriever", "open_corpus",
    "forget_opened", "BadLine", "SourceDoc", "iter_corpus",
]
