"""Reading questions and documents: ALCE JSON files, JSONL item files, JSONL document files.

Every loader validates and fails with :class:`~citegraph.errors.InputError` (one line) on a
missing file, invalid JSON, an empty question or a document without text.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from citegraph.errors import InputError
from citegraph.graphs.registry import GraphEntry, answer_methods, entry
from citegraph.state import Document


@dataclass
class Item:
    id: str
    question: str
    documents: list[Document]
    raw: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)  # further graph inputs (an answer to attribute: answer_text)


def check_answer_field(methods, answer_field: str | None) -> None:
    """Methods that attribute an existing answer (their registry entry's ``answer_input``) need
    ``--answer-field``; the others must not be given one (it would be silently ignored). ``methods``:
    names or registry entries."""
    entries = [m if isinstance(m, GraphEntry) else entry(m) for m in methods]
    need = [e.name for e in entries if e.answer_input]
    if need and not answer_field:
        raise InputError(f"{', '.join(need)} attributes an existing answer: name the items' answer field with "
                         f"--answer-field (e.g. --answer-field output for an ALCE-style output file)")
    if answer_field and not need:
        raise InputError(f"--answer-field: none of {', '.join(e.name for e in entries)} reads an answer "
                         f"(only {', '.join(answer_methods())} do)")


def attach_answers(items: list[Item], answer_field: str, input_key: str = "answer_text") -> list[Item]:
    """Give each item the answer to attribute, read from its ``answer_field`` (e.g. ``output`` of an
    ALCE-style output file). Every item must have it as non-empty text: one missing is an InputError
    naming the item, raised before anything runs."""
    items = [replace(it, inputs=dict(it.inputs)) for it in items]  # the caller's items stay as they were
    for it in items:
        val = it.raw.get(answer_field)
        if not isinstance(val, str) or not val.strip():
            raise InputError(f"item {it.id}: no {answer_field!r} text to attribute (--answer-field names the item's answer field)")
        it.inputs[input_key] = val
    return items


def read_utf8(path: str | Path) -> str:
    """A text file's content as UTF-8 (a UTF-8 byte-order mark is allowed); anything else is an
    InputError naming the file and the first byte that is not UTF-8, never a UnicodeDecodeError."""
    p = Path(path)
    data = p.read_bytes()
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(f"{p}: the file is UTF-16; save it as UTF-8")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"{p}: not UTF-8 text (byte {e.start}: 0x{data[e.start]:02x}); save it as UTF-8") from None


def check_output_path(path: str | Path) -> Path:
    """An output file we can write: not a directory, its folder creatable and writable. Checked before
    any work starts, so a bad --output costs nothing."""
    import os

    p = Path(path)
    if p.is_dir():
        raise InputError(f"--output is a directory: {p} (give a file name)")
    parent = p.parent if str(p.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create the output's folder {parent}: {e.strerror}") from None
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise InputError(f"cannot write {p}: permission denied")
    return p


#: how deep a JSON input may nest (objects and lists); an item needs 4 levels
MAX_JSON_DEPTH = 64
_SURROGATE = re.compile("[\ud800-\udfff]")


def json_loads(text: str, where: str) -> Any:
    """``json.loads`` whose every failure is an InputError naming ``where``: invalid JSON, an integer
    of more than 4,300 digits (Python's limit), nesting deeper than the interpreter's stack; and a
    value that no output could be written with (lone surrogate escapes such as ``\\ud800``, nesting
    deeper than :data:`MAX_JSON_DEPTH`) is refused here, not in the middle of a run."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{where}:{e.lineno}: invalid JSON ({e.msg})") from None
    except ValueError as e:  # "Exceeds the limit (4300 digits) for integer string conversion"
        raise InputError(f"{where}: a number in the JSON is too long ({str(e).split(';')[0]})") from None
    except RecursionError:
        raise InputError(f"{where}: the JSON nests too deeply") from None
    check_json_tree(data, where)
    return data


def check_json_tree(data: Any, where: str) -> None:
    """Walk a parsed JSON value (iteratively): InputError on nesting deeper than MAX_JSON_DEPTH or a
    string holding a lone surrogate (valid JSON escape, not encodable text)."""
    stack = [(data, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, str):
            m = _SURROGATE.search(v)
            if m:
                raise InputError(f"{where}: a string holds a lone surrogate escape (\\u{ord(m.group()):04x}), "
                                 "which is not text; fix the file's escapes")
        elif isinstance(v, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise InputError(f"{where}: the JSON nests more than {MAX_JSON_DEPTH} levels deep")
            children = v.items() if isinstance(v, dict) else enumerate(v)
            for k, c in children:
                if isinstance(k, str):
                    stack.append((k, depth))
                stack.append((c, depth + 1))


def _read_json_any(path: str | Path) -> Any:
    p = Path(path)
    if not p.exists():
        raise InputError(f"file not found: {p}")
    if p.is_dir():
        raise InputError(f"expected a file, got a directory: {p}")
    text = read_utf8(p)
    if not text.strip():
        raise InputError(f"file is empty: {p}")
    if p.suffix == ".jsonl" or (not text.lstrip().startswith(("[", "{")) or _looks_jsonl(text)):
        rows = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append(json_loads(line, f"{p}:{n}"))
            except InputError as e:  # the line's own number, not the JSON's line 1
                raise InputError(str(e).replace(f"{p}:{n}:1:", f"{p}:{n}:")) from None
        return rows
    return json_loads(text, str(p))


def _looks_jsonl(text: str) -> bool:
    lines = [l for l in text.splitlines() if l.strip()]
    if len(lines) < 2:
        return False
    try:
        json.loads(lines[0])
        json.loads(lines[1])
        return True
    except (ValueError, RecursionError):
        return False


def parse_documents(raw_docs: Any, where: str) -> list[Document]:
    if not isinstance(raw_docs, list):
        raise InputError(f"{where}: documents must be a list")
    docs = []
    for i, d in enumerate(raw_docs, 1):
        if isinstance(d, str):
            d = {"text": d}
        if not isinstance(d, dict):
            raise InputError(f"{where}: document {i} must be an object with a 'text' field")
        text = d.get("text") if d.get("text") is not None else d.get("contents") or d.get("segment")
        if text is not None and not isinstance(text, str):
            raise InputError(f"{where}: document {i}: the text must be a string, got {type(text).__name__}")
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"{where}: document {i} has no text")
        title = d.get("title")
        if title is not None and not isinstance(title, str):
            raise InputError(f"{where}: document {i}: the title must be a string, got {type(title).__name__}")
        doc_id = d.get("id") if d.get("id") not in (None, "") else d.get("docid")
        if doc_id is not None and not isinstance(doc_id, (str, int)) or isinstance(doc_id, bool):
            raise InputError(f"{where}: document {i}: the id must be a string or an integer, got {type(doc_id).__name__}")
        docs.append(Document(id=doc_id or "", title=title or "", text=text))
    return docs


def item_id(raw: dict[str, Any]) -> str:
    for k in ("sample_id", "id", "qid", "query_id"):
        if raw.get(k) not in (None, ""):
            return str(raw[k])
    return "q" + hashlib.sha1(str(raw.get("question", "")).encode()).hexdigest()[:12]


def check_question(q: Any, where: str) -> str:
    if q is not None and not isinstance(q, str):
        raise InputError(f"{where}: the question must be a string, got {type(q).__name__}")
    if not isinstance(q, str) or not q.strip():
        raise InputError(f"{where}: the question is empty")
    return q.strip()


def load_items(path: str | Path, limit: int | None = None) -> list[Item]:
    """ALCE-style JSON (a list, or ``{"data": [...]}``) or JSONL; each item has ``question`` and
    ``docs`` or ``documents``."""
    data = _read_json_any(path)
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        data = data["data"]
    if not isinstance(data, list):
        raise InputError(f"{path}: expected a list of items (or {{'data': [...]}})")
    if not data:
        raise InputError(f"{path}: no items")
    items: list[Item] = []
    seen: set[str] = set()
    for n, raw in enumerate(data, 1):
        if limit is not None and len(items) >= limit:
            break
        if not isinstance(raw, dict):
            raise InputError(f"{path}: item {n} is not an object")
        where = f"{path}: item {n}"
        q = check_question(raw.get("question"), where)
        docs = parse_documents(raw.get("docs", raw.get("documents", [])), where)
        if not docs:
            raise InputError(f"{where}: no documents")
        iid = item_id(raw)
        if iid in seen:
            iid = f"{iid}#{n}"
        seen.add(iid)
        items.append(Item(id=iid, question=q, documents=docs, raw=raw))
    return items


def load_documents(path: str | Path) -> list[Document]:
    """A JSONL (or JSON list) of documents: ``{"id"?, "title"?, "text"}`` per line."""
    data = _read_json_any(path)
    if isinstance(data, dict):
        data = data.get("documents") or data.get("docs") or [data]
    docs = parse_documents(data, str(path))
    if not docs:
        raise InputError(f"{path}: no documents")
    return docs


def bundled_example() -> Item:
    """The example shipped with the package (a question and 5 documents, under ``documents`` as the
    graphs' input names them; ``docs``, ALCE's name, is read too)."""
    from importlib.resources import files

    raw = json.loads(files("citegraph.examples").joinpath("example.json").read_text())
    return Item(id=item_id(raw), question=raw["question"], documents=parse_documents(raw.get("documents", raw.get("docs")), "example"), raw=raw)
