"""Errors that reach the user as one line."""


class InputError(ValueError):
    """Bad user input (missing file, invalid JSON, empty question...). The CLI prints it on one
    line and exits with status 2."""


class ModelError(RuntimeError):
    """A model could not be resolved, loaded or reached (after bounded retries). A run stops on it:
    every next item would fail the same way (see ``citegraph.tools.failures``)."""


class EndpointUnreachable(ModelError):
    """The model endpoint refused connections or did not answer in time, after the retries."""


class ModelReplyError(ModelError):
    """One call failed after the retries (an empty or malformed reply, a 5xx, a 429, a prompt too
    long): the item fails, and a run goes on with the next item."""


class NodeError(RuntimeError):
    """An unexpected error inside a graph node, re-raised with the node's name, the original error's
    class and its first line, so a failed run says where and why (LangGraph's server shows only
    ``RuntimeError``/``ValueError``-family messages; anything else reads "An internal error occurred").
    The original exception is chained as ``__cause__``."""

    def __init__(self, node: str, error: BaseException):
        self.node = node
        self.error_class = type(error).__name__
        first = (str(error).strip().splitlines() or [""])[0][:300]
        super().__init__(f"node {node!r} failed: {self.error_class}: {first}" if first else
                         f"node {node!r} failed: {self.error_class}")
