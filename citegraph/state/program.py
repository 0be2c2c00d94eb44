"""The parsed form of a GenerationPrograms program, as the method's state keeps it: each bullet a tree
of module calls (:class:`Call`) over source-sentence ids (:class:`SentenceRef`), the typed reasons a
line was dropped or changed (:class:`ProgramError`), and walks over a tree. The parser that builds them
is :mod:`citegraph.nodes.genprog.program`."""

from __future__ import annotations

from typing import Annotated, Literal, Union, get_args

from pydantic import BaseModel, ConfigDict, Field

#: how a fusion of more than ``max_fusion_inputs`` sentences is made to fit (GenProgContext)
FusionCap = Literal["split", "cut"]
FUSION_CAP_MODES = get_args(FusionCap)

ErrorKind = Literal[
    "empty",  # no program text at all
    "not_a_call",  # a line that is not a module call (prose, assignment, tuple, …)
    "syntax",  # not parseable even after repairs
    "unknown_function",  # a call to anything but the four modules (or a non-name callee)
    "arity",  # wrong number of positional arguments
    "bad_keyword",  # a keyword other than instruction=, or **kwargs
    "bad_instruction",  # instruction that is not a string constant (or too long)
    "bad_argument",  # an argument that is neither an id nor a call (attribute, lambda, …)
    "unknown_id",  # a sentence id that does not exist
    "too_deep",  # nesting beyond MAX_DEPTH
    "too_large",  # too many nodes / arguments / characters / trees
    "truncated",  # a valid tree beyond the answer-length cap (max_answer_sentences)
    "fusion_split",  # a fusion of more than max_fusion_inputs sentences, split into several bullets (kept)
    "fusion_cut",  # a nested fusion of more than max_fusion_inputs inputs, cut to its first ones (kept)
]


class SentenceRef(BaseModel):
    """A leaf: a source sentence by its global id (``S12``)."""

    model_config = ConfigDict(frozen=True)
    kind: Literal["ref"] = "ref"
    id: str

    def render(self) -> str:
        return self.id


class Call(BaseModel):
    """A module call: ``fn(*args, instruction=...)``."""

    model_config = ConfigDict(frozen=True)
    kind: Literal["call"] = "call"
    fn: str
    args: list[Annotated[Union["Call", SentenceRef], Field(discriminator="kind")]]
    instruction: str | None = None

    def render(self) -> str:
        parts = [a.render() for a in self.args]
        if self.instruction is not None:
            parts.append(f"instruction={self.instruction!r}")
        return f"{self.fn}({', '.join(parts)})"


Node = Annotated[Union[Call, SentenceRef], Field(discriminator="kind")]
Call.model_rebuild()


class ProgramError(BaseModel):
    """A typed, recorded reason why a program line was dropped (or, for ``fusion_split`` /
    ``fusion_cut``, changed before it ran)."""

    kind: ErrorKind
    message: str
    line: int = Field(description="1-based line number in the program text (0: whole program).")
    text: str = Field(default="", description="The offending line (truncated).")

    def __str__(self) -> str:
        return f"line {self.line}: {self.kind}: {self.message}"


class ProgramTree(BaseModel):
    """One parsed bullet: the root call, where it came from, and whether it needed repair."""

    line: int
    source: str
    root: Node
    repaired: bool = False
    item: int = Field(default=0, description="1-based position among the program's bullets (a bare '-' counts: a "
                      "sentence without a program); fences, blank lines and prose do not count.")

    def leaves(self) -> list[str]:
        return leaf_ids(self.root)

    def render(self) -> str:
        return render_node(self.root)


class ParsedProgram(BaseModel):
    trees: list[ProgramTree] = Field(default_factory=list)
    errors: list[ProgramError] = Field(default_factory=list)

    def render(self) -> str:
        """The valid part of the program, one bullet per tree (re-parseable)."""
        return "\n".join(f"- {t.render()}" for t in self.trees)


# ----------------------------------------------------------------------------- tree helpers
def render_node(node: Call | SentenceRef) -> str:
    return node.render()


def leaf_ids(node: Call | SentenceRef) -> list[str]:
    """Sentence ids of the leaves, left to right, deduplicated (iterative: no recursion limit)."""
    out: list[str] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, SentenceRef):
            if n.id not in out:
                out.append(n.id)
        else:
            stack.extend(reversed(n.args))
    return out


def post_order(node: Call | SentenceRef) -> list[tuple[str, Call | SentenceRef]]:
    """``(path, node)`` in post-order (children before parents); path like ``"0.1"``."""
    out: list[tuple[str, Call | SentenceRef]] = []
    stack: list[tuple[str, Call | SentenceRef, bool]] = [("0", node, False)]
    while stack:
        path, n, expanded = stack.pop()
        if isinstance(n, SentenceRef) or expanded:
            out.append((path, n))
            continue
        stack.append((path, n, True))
        for i in reversed(range(len(n.args))):
            stack.append((f"{path}.{i}", n.args[i], False))
    return out


def depth(node: Call | SentenceRef) -> int:
    best, stack = 0, [(node, 1)]
    while stack:
        n, d = stack.pop()
        if isinstance(n, Call):
            best = max(best, d)
            stack.extend((a, d + 1) for a in n.args)
    return best
