"""Errors that reach the user as one line."""


class InputError(ValueError):
    """Bad user input (missing file, invalid JSON, empty question...). The CLI prints it on one
    line and exits with status 2."""


class ModelError(RuntimeError):
    """A model could not be resolved, loaded or reached (after bounded retries)."""
