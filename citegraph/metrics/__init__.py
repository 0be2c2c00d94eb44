"""Quality metrics: ALCE citation recall/precision, RAAC sentence-level citation F1, correctness, ROUGE.

The evaluator (``citegraph.eval.scoring``) reports them; RAAC's calibration gate and ALCE's RERANK
consult the same functions while they run, so they live in this room, below the nodes and the
evaluator (layers import only downward). Every name is importable from ``citegraph.metrics``:
``jobs.py`` (verifier plumbing: :func:`run_jobs`, :func:`judge`, :func:`resolve_verifier`),
``citation.py`` (ALCE citation recall/precision with our deviations, RAAC's citation F1),
``alce_exact.py`` (ALCE's eval.py exactly: ``--alce``), ``correctness.py`` (STR-EM, QAMPARI, claims,
ROUGE-Lsum).

Citation quality
----------------
:func:`alce_citation_scores` follows ``compute_autoais(citation=True)`` of princeton-nlp/ALCE
``eval.py``:

* a sentence's citations (at most ``at_most_citations``, default 3, ALCE's ``--at_most_citations``)
  are joined as ``"Title: t\\ntext"`` blocks with ``"\\n"``; recall is 1 when that premise entails
  the sentence (citations removed); a sentence without citations, or citing a document outside
  the list, scores 0 (and its citations are not counted for precision);
* precision: a supported sentence with one citation counts 1 correct citation; in a supported
  sentence with several, a citation is *irrelevant* when it alone does not entail the sentence and
  the remaining citations still do; every other citation counts as correct;
* per answer, recall = supported sentences / sentences, precision = correct citations / counted
  citations (0 when none). An empty output has no sentences; ALCE skips such items when averaging
  (``empty: True`` in the result lets the caller do the same).

This is the default mode, with our documented deviations from ALCE (docs/evaluate.md: a
citation after the period belongs to the sentence before it (``attach_trailing``), the whole output
is scored (``cut_newline=False``), our sentence splitter, ``[1, 2]``-style groups, de-duplicated
ids, list markers dropped, fragments merged, ``Document [n]`` rewritten in the hypothesis).
``--alce`` does not use it: :func:`alce_exact_citation_job` is ALCE's ``compute_autoais`` item by
item, quirks included (punkt sentences, ``[n`` regex, ``[0]`` as the last document, duplicates
counted, ``sent`` before ``text``, hypotheses as written), and :func:`alce_rouge_lsum` /
:func:`alce_rouge_aggregate` its ROUGE-Lsum (punkt on lower-cased text, bootstrap median).

:func:`raac_citation_f1` is RAAC's sentence-level citation F1 (Chen et al., "A Framework of
Reflective Agents with Adaptive Collaboration for Attributed Summary Generation"): r_i = 1 when the
concatenated citations of sentence i entail it; p_i = essential citations / citations when r_i = 1
(a citation is essential when the others alone no longer entail the sentence; a single supporting
citation is essential), else 0; recall/precision are the means over sentences, F1 their harmonic mean.

All verifier calls of one answer are batched: one ``entails_many`` call for the joint premises,
one more for the precision checks. :func:`run_jobs` batches the same rounds across many answers.

Correctness (ALCE): :func:`str_em` (ASQA), :func:`qampari_scores`, :func:`claims_recall` (ELI5,
verifier with the citation-free output as premise) and :func:`rouge_lsum` (``rouge_score``,
stemmed, one sentence per line split on the original-case text, then lower-cased; best over the
references).
"""

from citegraph.metrics.alce_exact import (
    alce_exact_citation_job, alce_exact_citation_scores, alce_exact_doc, alce_exact_output, alce_exact_units,
    alce_rouge_aggregate, alce_rouge_lsum,
)
from citegraph.metrics.citation import (
    CitationF1, SentenceCitationScore, alce_citation_job, alce_citation_scores, alce_doc, normalize_answer,
    prepare_output, raac_citation_f1, raac_citation_job, remove_citations,
)
from citegraph.metrics.correctness import claims_job, claims_recall, exact_presence, qampari_scores, rouge_lsum, str_em
from citegraph.metrics.jobs import Job, Pair, judge, resolve_verifier, run_jobs

__all__ = [
    "CitationF1", "SentenceCitationScore", "alce_citation_job", "alce_citation_scores", "alce_exact_citation_job",
    "alce_exact_citation_scores", "alce_exact_doc", "alce_exact_output", "alce_exact_units", "alce_rouge_aggregate",
    "alce_doc", "alce_rouge_lsum", "claims_job", "Job", "Pair",
    "claims_recall", "exact_presence", "judge", "normalize_answer", "prepare_output", "qampari_scores",
    "raac_citation_f1", "raac_citation_job", "remove_citations", "resolve_verifier", "rouge_lsum",
    "run_jobs", "str_em",
]
