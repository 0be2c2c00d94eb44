"""The follow-up turn of structured output (``tools.models.structured``): after a reply that did not
validate, the model is told why and shown the schema again."""

from __future__ import annotations

import json


def retry_prompt(error: str, schema: dict) -> str:
    """The turn after an invalid reply: ``error`` (its first line) and the JSON schema asked for."""
    return (f"That reply was not valid ({error}). Reply again with only a JSON object that matches "
            f"this schema:\n{json.dumps(schema)}")
