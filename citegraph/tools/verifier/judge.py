"""The LLM judge backend (``llm-judge[:<chat spec>][:<prompt>]``): P(Yes) of a chat model asked
whether a passage supports a claim. Its prompts live in :mod:`citegraph.prompts.judge`."""

from __future__ import annotations

from typing import Callable, Sequence

from citegraph.prompts.judge import JUDGE_PROMPT, JUDGE_PROMPTS
from citegraph.state.base import default_judge
from citegraph.tools.models import judge_many, judge_workers, yes_probability
from citegraph.tools.progress import emit
from citegraph.tools.verifier.base import Pair, Verifier


def parse_judge_spec(arg: str) -> tuple[str, str]:
    """``"<chat spec>[:<prompt>]"`` (what follows ``llm-judge:``) → ``(chat spec, prompt name)``.
    The prompt name is the last colon segment when it names a judge prompt; the chat spec defaults
    to ``$CITEGRAPH_JUDGE`` (else ``$CITEGRAPH_LLM``, else ``local``): ``"openai:gpt-4o:table16"`` →
    ``("openai:gpt-4o", "table16")``, ``"table16"`` → ``("local", "table16")``, ``"local"`` → ``("local", "ours")``."""
    head, sep, last = arg.rpartition(":")
    if last in JUDGE_PROMPTS:
        return (head if sep else "") or default_judge(), last
    return arg or default_judge(), "ours"


class LLMJudgeVerifier(Verifier):
    """Yes/No judge: P(Yes) from ``citegraph.tools.models.yes_probability(chat_spec, prompt)``.

    Long premises are split into overlapping character windows (``max_premise_chars``) and the
    maximum over windows is taken, as for the cross-encoders.
    """

    _reports_batches = True

    def __init__(self, spec: str = "llm-judge", chat_spec: str = "local", max_premise_chars: int = 6000,
                 window_overlap_chars: int = 500, prompt: str = JUDGE_PROMPT,
                 yes_probability: Callable[[str, str], float] | None = None, **kw):
        super().__init__(spec=spec, **kw)
        self.chat_spec = chat_spec
        self.max_premise_chars = int(max_premise_chars)
        self.window_overlap_chars = int(window_overlap_chars)
        self.prompt = prompt
        self._yes_probability = yes_probability

    def _yes(self, prompt: str) -> float:
        fn = self._yes_probability
        if fn is None:
            fn = self._yes_probability = yes_probability
        return float(fn(self.chat_spec, prompt))

    def _windows(self, premise: str) -> list[str]:
        n, size = len(premise), self.max_premise_chars
        if n <= size:
            return [premise]
        step = max(size - self.window_overlap_chars, 1)
        return [premise[s: s + size] for s in range(0, n - self.window_overlap_chars, step)]

    def _score_uncached(self, pairs: Sequence[Pair]) -> list[float]:
        # pairs grouped by premise: a local model re-uses the cached passage prefix between claims;
        # a model behind an endpoint gets a group of judgements in flight at once (judge_many)
        out = [0.0] * len(pairs)
        start = self.stats.batches
        order = sorted(range(len(pairs)), key=lambda i: pairs[i][0])
        width = 1
        if self._yes_probability is None:
            width = judge_workers(self.chat_spec)
        for g in range(0, len(order), width):
            group = order[g: g + width]
            asks = [(i, self.prompt.format(premise=w, hypothesis=pairs[i][1])) for i in group for w in self._windows(pairs[i][0])]
            if width == 1:
                scores = [self._yes(q) for _, q in asks]
            else:
                scores = judge_many(self.chat_spec, [q for _, q in asks], workers=width)
            best: dict[int, float] = {}
            for (i, _), v in zip(asks, scores):  # the maximum over a premise's windows
                best[i] = max(best.get(i, float("-inf")), float(v))
            for i, v in best.items():
                out[i] = v
            self.stats.batches += len(group)
            emit("verifier_batch", verifier=self.spec, done=self.stats.batches - start, total=len(pairs))
        return out
