"""Safe parser for GenerationPrograms (Wan et al., 2025) program text.

A program is a bullet list, one bullet per output sentence, each a nested call of the text
modules ``paraphrase(x, instruction=...)``, ``compression(x, instruction=...)``,
``fusion(x1, x2, ..., instruction=...)`` and ``extract(x)``, whose arguments are source-sentence
ids (``S12``) or further calls::

    - fusion(compression(S2, instruction="Keep the date."), S7, instruction="Combine the facts.")
    - extract(S4)

Safety: the text is only ever given to :func:`ast.parse` and the resulting tree is *walked* against
a whitelist (function names and arity, the single keyword ``instruction`` with a string constant,
ids that exist). Nothing is ever passed to ``eval``, ``exec`` or ``compile``; anything outside the
whitelist (attribute access, lambdas, comprehensions, subscripts, ``**kwargs`` …) becomes a typed
:class:`ProgramError`. Depth, size and line length are bounded *before* parsing, so hostile nesting
yields an error instead of a ``RecursionError``.

The trees it builds are the state's types (:mod:`citegraph.state.program`, re-exported here).

Common malformations are repaired first: code fences, a leading ``python`` line, bullets and
markdown bold, a trailing period or comma, unbalanced parentheses, and the
``f(x)), instruction=...`` slip. Invalid bullets are dropped, each with a recorded error.
"""

from __future__ import annotations

import ast
import re
from citegraph.state.program import (FUSION_CAP_MODES, Call, ErrorKind, Node, ParsedProgram, ProgramError,  # noqa: F401
                                     ProgramTree, SentenceRef, depth, leaf_ids, post_order, render_node)

#: function name -> (min positional args, max positional args or None)
FUNCTIONS: dict[str, tuple[int, int | None]] = {
    "paraphrase": (1, 1),
    "compression": (1, 1),
    "fusion": (2, None),
    "extract": (1, 1),
}
#: modules that call the LLM (``extract`` copies its input verbatim)
LLM_MODULES = frozenset({"paraphrase", "compression", "fusion"})

# spellings small models use for the four modules (repaired, not rejected)
ALIASES = {
    "extract": "extract", "extraction": "extract", "extracted": "extract",
    "paraphrase": "paraphrase", "paraphrasing": "paraphrase", "paraphrased": "paraphrase", "rephrase": "paraphrase",
    "compression": "compression", "compress": "compression", "compressed": "compression",
    "fusion": "fusion", "fuse": "fusion", "fused": "fusion",
}

MAX_DEPTH = 8  # nesting of calls in one tree
MAX_NODES = 64  # calls + ids in one tree
MAX_ARGS = 32  # positional arguments of one call (small models write fusion() of 20+ sentences)
MAX_LINE_CHARS = 4000
MAX_TREES = 64
MAX_INSTRUCTION_CHARS = 1000

_ID = re.compile(r"^[Ss](\d{1,7})$")


class _Invalid(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


# ----------------------------------------------------------------------------- fusion arity cap

def _groups(args: list, k: int) -> list[list]:
    """``args`` in consecutive groups of at most ``k``, as even in size as possible."""
    n = len(args)
    g = -(-n // k)
    base, extra = divmod(n, g)
    out, i = [], 0
    for j in range(g):
        size = base + (1 if j < extra else 0)
        out.append(args[i: i + size])
        i += size
    return out


def _single(node: Call | SentenceRef, root: bool) -> Call | SentenceRef:
    """One input left of a fusion: the input itself (``extract(S)`` where a bullet needs a call)."""
    return Call(fn="extract", args=[node]) if root and isinstance(node, SentenceRef) else node


def _split_root(node: Call | SentenceRef, k: int, root: bool = True,
                dropped: list[str] | None = None) -> list[Call | SentenceRef] | None:
    """A root fusion of more than ``k`` inputs (possibly under single-input calls, e.g.
    ``compression(fusion(...))``) as several roots of at most ``k`` inputs; None when there is none.

    The pieces carry no ``instruction=``: the planner wrote it for all the inputs together ("say it
    was built in 1889 and is 330 m tall"), and a piece given it states those facts over sentences
    that do not hold them, under their citations -- the trace would no longer be the attribution.
    Each instruction left out is appended to ``dropped``."""
    if not isinstance(node, Call):
        return None
    if node.fn == "fusion" and len(node.args) > k:
        if node.instruction and dropped is not None:
            dropped.append(node.instruction)
        return [Call(fn="fusion", args=list(g)) if len(g) > 1 else _single(g[0], root)
                for g in _groups(list(node.args), k)]
    if len(node.args) == 1:
        parts = _split_root(node.args[0], k, root=False, dropped=dropped)
        if parts is not None:
            if node.instruction and dropped is not None:
                dropped.append(node.instruction)
            return [Call(fn=node.fn, args=[p]) for p in parts]
    return None


def _cut(node: Call | SentenceRef, k: int, dropped: list[str], root: bool = True) -> Call | SentenceRef:
    """Every fusion of more than ``k`` inputs cut to its first ``k`` (the leaf ids cut off are
    appended to ``dropped``)."""
    if not isinstance(node, Call):
        return node
    args = [_cut(a, k, dropped, root=False) for a in node.args]
    if node.fn == "fusion" and len(args) > k:
        for a in args[k:]:
            dropped.extend(leaf_ids(a))
        args = args[:k]
        if len(args) == 1:
            return _single(args[0], root)
    return Call(fn=node.fn, args=args, instruction=node.instruction)


def cap_fusion(trees: list[ProgramTree], max_inputs: int, mode: str = "split") -> tuple[list[ProgramTree], list[ProgramError]]:
    """Bound the arity of ``fusion`` calls (``max_inputs``; 0 = no cap), recording every change.

    ``split``: a bullet whose root is a fusion of more than ``max_inputs`` inputs (also under
    single-input calls such as ``compression(fusion(...))``) becomes several bullets, the inputs in
    consecutive groups of at most ``max_inputs``, as even as possible, in their order; a group of
    one input becomes ``extract(S)`` (or the input call itself). No input the planner chose is
    dropped; its ``instruction=`` is (it was written for all the inputs, and would make every
    piece state the whole claim under the citations of a part; named in the error). A nested fusion (the argument of a fusion or of a multi-input call) cannot be split
    without changing its parent, so it is cut in both modes. ``cut``: every oversized fusion keeps
    its first ``max_inputs`` inputs; the leaf ids cut off are named in the error. Each change is a
    :class:`ProgramError` (``fusion_split`` / ``fusion_cut``) of the bullet's line."""
    if not max_inputs or max_inputs <= 0:
        return list(trees), []
    if mode not in FUSION_CAP_MODES:
        raise ValueError(f"fusion cap mode must be one of {FUSION_CAP_MODES}, got {mode!r}")
    out: list[ProgramTree] = []
    errors: list[ProgramError] = []
    for t in trees:
        roots = [t.root]
        if mode == "split":
            instructions: list[str] = []
            parts = _split_root(t.root, max_inputs, dropped=instructions)
            if parts is not None:
                n = max(len(c.args) for _, c in post_order(t.root) if isinstance(c, Call) and c.fn == "fusion")
                left_out = ("; the planner's instruction(s) for all the inputs left out of every piece: "
                            + " | ".join(repr(i) for i in instructions)) if instructions else ""
                errors.append(ProgramError(
                    kind="fusion_split", line=t.line, text=t.source[:200],
                    message=f"fusion of {n} inputs split into {len(parts)} bullets of at most {max_inputs} "
                            f"inputs (max_fusion_inputs): " + " | ".join(render_node(p) for p in parts) + left_out))
                roots = parts
        for r in roots:
            dropped: list[str] = []
            new = _cut(r, max_inputs, dropped)
            if dropped:
                errors.append(ProgramError(
                    kind="fusion_cut", line=t.line, text=t.source[:200],
                    message=f"fusion cut to its first {max_inputs} inputs (max_fusion_inputs); dropped "
                            f"{', '.join(dropped)}: {render_node(new)}"))
            out.append(t.model_copy(update={"root": new}))
    return out, errors


# ----------------------------------------------------------------------------- cleaning
_FENCE_RE = re.compile(r"```[a-zA-Z]*")
_BULLET_RE = re.compile(r"^\s*(?:[-*•]+|\d{1,3}[.)]|\(\d{1,3}\))\s*")
_LABEL_RE = re.compile(r"^\s*(?:sentence\s*\d+|output|program|answer)\s*[:=]\s*", re.I)


_BULLET_START_RE = re.compile(r"^\s*(?:[-*•]+|\d{1,3}[.)]|\(\d{1,3}\))(?:\s|$)")


def _clean_line(raw: str) -> str:
    """One line without fences, ``python`` markers, bullets, labels and markdown ("" if nothing is left)."""
    line = _FENCE_RE.sub("", raw).replace("`", "").strip()
    if line.lower() in ("python", "py", "output:", "program:", ""):
        return ""
    line = _BULLET_RE.sub("", line, count=1)
    line = re.sub(r"^\*\*|\*\*$", "", line).strip()  # markdown bold around the call
    line = _BULLET_RE.sub("", line, count=1)
    if line.lower().startswith("python "):
        line = line[7:].strip()
    return _LABEL_RE.sub("", line, count=1).strip()


def _indent(raw: str) -> int:
    return len(raw) - len(raw.lstrip())


def _clean_lines(text: str) -> list[tuple[int, int, str]]:
    """(first line number, bullet number, logical line) for every line with content.

    A call written over several lines (pretty-printed: ``fusion(`` / indented arguments / ``)``) is
    joined into one logical line while its brackets are open and the next line clearly continues it
    (the call so far ends with ``(`` or ``,``, or the next line is indented deeper, starts with ``)``
    or ``instruction``); a new bullet always starts a new line, so one unclosed bullet does not
    swallow the next. Bullet numbers count bullets and call lines, including a bare ``-``."""
    out: list[tuple[int, int, str]] = []
    item = 0
    buf: list | None = None  # [line number, item, parts, open brackets, indent, chars]

    def flush():
        if buf is not None:
            out.append((buf[0], buf[1], " ".join(buf[2])))

    for n, raw in enumerate(text.splitlines(), 1):
        line = _clean_line(raw)
        bare = _FENCE_RE.sub("", raw).replace("`", "")
        bullet = bool(_BULLET_START_RE.match(bare))
        if buf is not None and line and not bullet and buf[3] > 0 and buf[5] <= MAX_LINE_CHARS and (
                buf[2][-1].rstrip().endswith(("(", ",")) or line.startswith(")")
                or line.lower().startswith("instruction") or _indent(bare) > buf[4]):
            buf[2].append(line)
            buf[3] += _paren_balance(line)[1]
            buf[5] += len(line) + 1
            continue
        flush()
        buf = None
        if not line:
            if bullet and not bare.strip().rstrip("-*•").strip(" .)(0123456789"):
                item += 1  # a bare bullet: a sentence without a program
            continue
        numbered = bullet or _looks_like_program(line)
        item += numbered
        buf = [n, item if numbered else 0, [line], _paren_balance(line)[1], _indent(bare), len(line)]
    flush()
    return out


def _paren_balance(s: str) -> tuple[int, int]:
    """(max nesting depth, final balance) of round brackets outside string literals."""
    depth_now = best = 0
    quote: str | None = None
    esc = False
    for ch in s:
        if quote:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth_now += 1
            best = max(best, depth_now)
        elif ch in ")]}":
            depth_now -= 1
    return best, depth_now


def _repairs(line: str) -> list[str]:
    """Candidate repairs of a line, most conservative first."""
    cands = [line]
    s = line.rstrip().rstrip(".,;")
    cands.append(s)
    fixed = re.sub(r"\)\)\s*,\s*instruction", "), instruction", s)
    if fixed != s:  # the common slip: the inner call closed twice before instruction=
        _, b2 = _paren_balance(fixed)
        cands.append(fixed + ")" * b2 if b2 > 0 else fixed)
    _, bal = _paren_balance(s)
    if bal > 0:
        cands.append(s + ")" * bal)
    elif bal < 0:
        t = s
        for _ in range(-bal):
            if t.endswith(")"):
                t = t[:-1].rstrip()
        cands.append(t)
    if s.count('"') % 2 == 1:  # an unclosed instruction string
        t = s + '"'
        _, b3 = _paren_balance(t)
        cands.append(t + ")" * max(b3, 0))
    seen, uniq = set(), []
    for c in cands:
        if c not in seen:
            seen.add(c)
            uniq.append(c)
    return uniq


# ----------------------------------------------------------------------------- validation
def _convert(node: ast.AST, valid: set[str] | None, level: int, budget: list[int]) -> Call | SentenceRef:
    budget[0] += 1
    if budget[0] > MAX_NODES:
        raise _Invalid("too_large", f"more than {MAX_NODES} calls and ids in one sentence")
    if isinstance(node, ast.Name) or (isinstance(node, ast.Constant) and isinstance(node.value, str) and _ID.match(node.value.strip())):
        name = node.id if isinstance(node, ast.Name) else node.value.strip()
        m = _ID.match(name)
        if not m:
            raise _Invalid("bad_argument", f"{name!r} is not a sentence id (expected S<number>)")
        sid = f"S{int(m.group(1))}"
        if valid is not None and sid not in valid:
            raise _Invalid("unknown_id", f"sentence id {sid} does not exist")
        return SentenceRef(id=sid)
    if not isinstance(node, ast.Call):
        raise _Invalid("bad_argument", f"argument of type {type(node).__name__} is not allowed (only ids and module calls)")
    if level > MAX_DEPTH:
        raise _Invalid("too_deep", f"calls nested deeper than {MAX_DEPTH}")
    if not isinstance(node.func, ast.Name):
        raise _Invalid("unknown_function", f"callee of type {type(node.func).__name__} is not allowed")
    fn = ALIASES.get(node.func.id.lower(), node.func.id)
    if fn not in FUNCTIONS:
        raise _Invalid("unknown_function", f"{fn!r} is not a module (allowed: {', '.join(FUNCTIONS)})")
    instruction: str | None = None
    for kw in node.keywords:
        if kw.arg != "instruction":
            raise _Invalid("bad_keyword", "**kwargs is not allowed" if kw.arg is None else f"keyword {kw.arg!r} is not allowed (only instruction=)")
        v = kw.value
        if isinstance(v, ast.Constant) and v.value is None:
            instruction = None
        elif isinstance(v, ast.Constant) and isinstance(v.value, str):
            if len(v.value) > MAX_INSTRUCTION_CHARS:
                raise _Invalid("bad_instruction", f"instruction longer than {MAX_INSTRUCTION_CHARS} characters")
            instruction = v.value.strip() or None
        else:
            raise _Invalid("bad_instruction", f"instruction must be a string constant, not {type(v).__name__}")
    lo, hi = FUNCTIONS[fn]
    if any(isinstance(a, ast.Starred) for a in node.args):
        raise _Invalid("bad_argument", "*args is not allowed")
    n = len(node.args)
    if n > MAX_ARGS:
        raise _Invalid("too_large", f"{fn} has {n} arguments (max {MAX_ARGS})")
    if n < lo or (hi is not None and n > hi):
        want = f"exactly {lo}" if hi == lo else f"at least {lo}"
        raise _Invalid("arity", f"{fn} takes {want} positional argument(s), got {n}")
    args = [_convert(a, valid, level + 1, budget) for a in node.args]
    return Call(fn=fn, args=args, instruction=instruction)


def _parse_line(line: str, valid: set[str] | None) -> tuple[Call, bool]:
    """Parse one cleaned line into a root Call; raises _Invalid. Returns (root, repaired)."""
    if len(line) > MAX_LINE_CHARS:
        raise _Invalid("too_large", f"line longer than {MAX_LINE_CHARS} characters")
    max_depth, _ = _paren_balance(line)
    if max_depth > MAX_DEPTH * 2 + 2:  # cheap pre-check: never hand absurd nesting to the parser
        raise _Invalid("too_deep", f"brackets nested {max_depth} deep (max {MAX_DEPTH} calls)")
    last: _Invalid | None = None
    for i, cand in enumerate(_repairs(line)):
        try:
            tree = ast.parse(cand, mode="eval")
        except (SyntaxError, ValueError, MemoryError, RecursionError, OverflowError) as e:
            last = _Invalid("syntax", f"{type(e).__name__}: {getattr(e, 'msg', None) or e}")
            continue
        body = tree.body
        if isinstance(body, ast.Name) or (isinstance(body, ast.Constant) and isinstance(body.value, str)):
            # a bare id: read as extract(id)
            ref = _convert(body, valid, 1, [0])
            if isinstance(ref, SentenceRef):
                return Call(fn="extract", args=[ref]), True
        if not isinstance(body, ast.Call):
            raise _Invalid("not_a_call", f"expected a module call, got {type(body).__name__}")
        try:
            root = _convert(body, valid, 1, [0])
        except RecursionError:
            raise _Invalid("too_deep", "nesting too deep") from None
        return root, i > 0  # type: ignore[return-value]
    raise last or _Invalid("syntax", "unparseable")


def _looks_like_program(line: str) -> bool:
    return "(" in line or bool(re.search(r"\b[Ss]\d+\b", line))


def parse_program(text: str | None, valid_ids=None) -> ParsedProgram:
    """Parse program text into trees. Never raises for any input string; never executes it.

    ``valid_ids``: the sentence ids that exist (``None``: any ``S<n>`` is accepted).
    Every line that is dropped leaves a :class:`ProgramError` in ``errors``.
    """
    out = ParsedProgram()
    valid = None if valid_ids is None else {str(v) for v in valid_ids}
    if not isinstance(text, str) or not text.strip():
        out.errors.append(ProgramError(kind="empty", message="the program is empty", line=0))
        return out
    for n, item, line in _clean_lines(text):
        snippet = line[:200]
        if not _looks_like_program(line):
            out.errors.append(ProgramError(kind="not_a_call", message="not a module call (prose ignored)", line=n, text=snippet))
            continue
        if len(out.trees) >= MAX_TREES:
            out.errors.append(ProgramError(kind="too_large", message=f"more than {MAX_TREES} sentences", line=n, text=snippet))
            continue
        try:
            root, repaired = _parse_line(line, valid)
        except _Invalid as e:
            out.errors.append(ProgramError(kind=e.kind, message=e.message, line=n, text=snippet))  # type: ignore[arg-type]
            continue
        except RecursionError:
            out.errors.append(ProgramError(kind="too_deep", message="nesting too deep", line=n, text=snippet))
            continue
        except (MemoryError, ValueError, TypeError) as e:  # defensive: any parser failure is typed
            out.errors.append(ProgramError(kind="syntax", message=f"{type(e).__name__}: {e}"[:300], line=n, text=snippet))
            continue
        out.trees.append(ProgramTree(line=n, item=item, source=line, root=root, repaired=repaired))
    if not out.trees and not out.errors:
        out.errors.append(ProgramError(kind="empty", message="the program has no module calls", line=0))
    return out
