"""The verifier protocol: :class:`Verifier` (batched, cached, counted ``score``/``entails``/
``entails_many`` on ``(premise, hypothesis)`` pairs), :class:`VerifierStats` and
:class:`FunctionVerifier` (a function as a verifier, for stubs). Backends subclass ``Verifier`` and
implement ``_score_uncached`` on de-duplicated pairs."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

from citegraph.tools import tracing
from citegraph.tools.progress import emit
from citegraph.tools.usage import record_verifier

Pair = tuple[str, str]

DEFAULT_THRESHOLD = 0.5
#: the attribution stage's partial threshold for a verifier without a calibration of its own
DEFAULT_PARTIAL = 0.2


def logit(p: float) -> float:
    """log(p / (1 - p)), ``p`` clipped to [1e-6, 1 - 1e-6]."""
    p = min(max(float(p), 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def temperature_scaled(p: float, temperature: float) -> float:
    """A binary score as if the model's logit had been divided by ``temperature`` (the same side of 0.5,
    the same order)."""
    z = logit(p) / temperature
    return 1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z))  # no overflow at any temperature


@dataclass
class VerifierStats:
    pairs_scored: int = 0  # pairs actually sent to the backend (cache misses, after dedup)
    cache_hits: int = 0  # pairs answered from the cache (including duplicates inside one call)
    batches: int = 0  # backend batches run
    seconds: float = 0.0  # wall time spent in the backend
    windows_skipped: int = 0  # long premises of which only the max_windows best-overlap windows were scored

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Verifier:
    """Base class. Subclasses implement :meth:`_score_uncached` on de-duplicated pairs."""

    spec: str = "base"
    #: how the scores are shown (:meth:`shown`): ``sigmoid(logit(score) / shown_temperature)``, fitted on
    #: held-out development pairs (``assets/verifier/calibration.json``, set by ``get_verifier``); 1.0: as
    #: scored. (A model folder's own ``temperature``, in its inference.json, changes the scores themselves.)
    shown_temperature: float = 1.0
    #: the attribution stage's default partial threshold, on the shown scale (chosen with the temperature)
    partial: float = DEFAULT_PARTIAL
    calibration: dict | None = None

    def __init__(
        self,
        spec: str | None = None,
        threshold: float = DEFAULT_THRESHOLD,
        cache: bool = True,
        batch_size: int = 32,
    ):
        if spec is not None:
            self.spec = spec
        self.threshold = float(threshold)
        self.stats = VerifierStats()
        self.batch_size = int(batch_size)
        self._use_cache = bool(cache)
        self._cache: dict[Pair, float] = {}
        self._lock = threading.RLock()

    # -- to implement -------------------------------------------------------------------------
    def _score_uncached(self, pairs: Sequence[Pair]) -> list[float]:  # pragma: no cover
        raise NotImplementedError

    # -- public API ---------------------------------------------------------------------------
    # progress: a backend that scores in several batches emits "verifier_batch" after each of them;
    # for the others score() emits one event per call (citegraph.tools.progress)
    _reports_batches = False

    def score(self, pairs: Sequence[Pair]) -> list[float]:
        """Return P(entailed) for each ``(premise, hypothesis)``; repeated pairs are scored once."""
        pairs = [(str(p), str(h)) for p, h in pairs]
        if not pairs:
            return []
        if not tracing.enabled():
            return self._score(pairs)
        with tracing.span("verifier", "EVALUATOR") as s:
            hits_before = self.stats.cache_hits
            scores = self._score(pairs)
            tracing.set_attributes(s, tracing.verifier_attributes(self.spec, pairs, scores,
                                                                  self.stats.cache_hits - hits_before))
            return scores

    def _score(self, pairs: list[Pair]) -> list[float]:
        with self._lock:
            todo: list[Pair] = []
            seen: set[Pair] = set()
            for pair in pairs:
                if (self._use_cache and pair in self._cache) or pair in seen:
                    self.stats.cache_hits += 1
                else:
                    seen.add(pair)
                    todo.append(pair)
            # nothing entails a claim from an empty premise (e.g. a claim with no evidence)
            fresh: dict[Pair, float] = {pair: 0.0 for pair in todo if not pair[0].strip()}
            model_todo = [pair for pair in todo if pair not in fresh]
            spent = 0.0
            if model_todo:
                t0 = time.perf_counter()
                scores = self._score_uncached(model_todo)
                spent = time.perf_counter() - t0
                self.stats.seconds += spent
                if not self._reports_batches:  # backends that batch internally report each batch themselves
                    emit("verifier_batch", verifier=self.spec, done=len(model_todo), total=len(model_todo))
                if len(scores) != len(model_todo):
                    raise RuntimeError(f"verifier {self.spec!r} returned {len(scores)} scores for {len(model_todo)} pairs")
                fresh.update({pair: float(s) for pair, s in zip(model_todo, scores)})
            self.stats.pairs_scored += len(todo)
            if self._use_cache:
                self._cache.update(fresh)
            record_verifier(len(todo), len(pairs) - len(todo), spent)
            return [fresh[p] if p in fresh else self._cache[p] for p in pairs]

    def entails(self, premise: str, hypothesis: str, threshold: float | None = None) -> bool:
        return self.entails_many([(premise, hypothesis)], threshold)[0]

    def entails_many(self, pairs: Sequence[Pair], threshold: float | None = None) -> list[bool]:
        t = self.threshold if threshold is None else float(threshold)
        return [s >= t for s in self.score(pairs)]

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()

    # -- the score a reader sees --------------------------------------------------------------
    def set_calibration(self, calibration: dict) -> None:
        """Show scores at ``calibration["temperature"]`` and default the stage's partial threshold to
        ``calibration["partial"]`` (an entry of ``calibration.json``); what ``score`` returns is unchanged."""
        t = float(calibration.get("temperature", 1.0))
        if not t > 0:
            raise ValueError(f"verifier {self.spec!r}: calibration temperature must be above 0, got {t}")
        self.shown_temperature, self.partial = t, float(calibration.get("partial", DEFAULT_PARTIAL))
        self.calibration = dict(calibration)

    def shown(self, score: float) -> float:
        """``score`` as P(supported) read off held-out pairs (temperature scaling: the same decisions at
        0.5, and the same order). Every status the stage gives is decided on ``score``; this is the figure
        printed beside it."""
        if self.shown_temperature == 1.0:
            return float(score)
        return temperature_scaled(score, self.shown_temperature)

    def unshown(self, p: float) -> float:
        """The score that is shown as ``p`` (the inverse of :meth:`shown`): a threshold on the shown scale
        as the scores are compared."""
        if self.shown_temperature == 1.0:
            return float(p)
        return temperature_scaled(p, 1 / self.shown_temperature)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(spec={self.spec!r}, threshold={self.threshold})"


class FunctionVerifier(Verifier):
    """Wraps ``fn(premise, hypothesis) -> float`` (or a batched ``fn(pairs) -> list``); for stubs."""

    def __init__(self, fn: Callable, spec: str = "function", batched: bool = False, **kw):
        super().__init__(spec=spec, **kw)
        self._fn = fn
        self._batched = batched

    def _score_uncached(self, pairs: Sequence[Pair]) -> list[float]:
        self.stats.batches += 1
        if self._batched:
            return [float(s) for s in self._fn(list(pairs))]
        return [float(self._fn(p, h)) for p, h in pairs]
