"""The documentation's code runs: every fenced ```bash / ```python block of README.md and docs/**/*.md
that the line before it marks ``<!-- runnable -->`` is run offline, so the docs cannot rot.

Python blocks run in a fresh interpreter with a preamble that registers a scripted chat model under the
embedded model's specs (``local``, ``local-small``) and a word-overlap verifier under ``default``; bash
blocks run under ``bash -euo pipefail`` in an empty temporary folder where ``citegraph`` is the CLI of
this checkout behind the same preamble. A block fails the test when it exits non-zero or prints nothing.
Blocks that need the embedded model, a server or data stay unmarked.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MARKER = "<!-- runnable -->"
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```\s*$", re.S | re.M)

# Registered before a block runs, in the block's own interpreter: the scripted model answers every prompt
# with two cited sentences about the Eiffel Tower example the docs use; the verifier (a deterministic
# stand-in for the cross-encoder) gives P = 1 when the premise holds every content word of the hypothesis,
# else at most 0.4 by their overlap.
PREAMBLE = textwrap.dedent('''
    import re as _re
    from citegraph.testing import ScriptedChatModel as _Scripted
    from citegraph.tools.models import register_chat_model as _reg_model
    from citegraph.tools.verifier import Verifier as _Verifier, register_verifier as _reg_verifier

    _REPLY = "The Eiffel Tower was built from 1887 to 1889 [1]. Gustave Eiffel's company built it [2]."
    _model = _Scripted(script=[_REPLY], judge=0.9)
    for _spec in ("local", "local-small"):
        _reg_model(_spec, _model)

    _STOP = {"the", "a", "an", "is", "are", "was", "in", "of", "and", "by", "to", "it", "its", "from"}

    def _words(t):
        return {w for w in _re.findall(r"[a-z0-9]+", t.lower()) if w not in _STOP}

    class _Overlap(_Verifier):
        def _score_uncached(self, pairs):
            out = []
            for p, h in pairs:
                hw, pw = _words(h), _words(p)
                out.append(1.0 if hw <= pw else 0.4 * len(hw & pw) / max(1, len(hw)))
            return out

    _reg_verifier("default", _Overlap(spec="default"))
''')

CLI = PREAMBLE + textwrap.dedent('''
    import sys
    from citegraph.cli import main
    sys.exit(main(sys.argv[1:]))
''')


def doc_files() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def runnable_blocks() -> list[tuple[str, str, str]]:
    """``(id, language, code)`` of every block marked runnable, in file order."""
    out = []
    for path in doc_files():
        text = path.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
            if before != MARKER:
                continue
            lang, code = m.group(1), m.group(2)
            line = text[: m.start()].count("\n") + 1
            out.append((f"{path.relative_to(REPO)}:{line}", lang, code))
    return out


BLOCKS = runnable_blocks()


def test_marked_blocks_cover_the_front_door():
    """The blocks the issue names stay marked: README's Python snippet, `ask --docs`, `cite`, as_tool and
    the test doubles of citegraph.testing."""
    def marked(prefix):
        return [code for ident, _, code in BLOCKS if ident.startswith(prefix + ":")]

    readme, apps = marked("README.md"), marked("docs/apps.md")
    assert any("build_graph" in c and ".invoke(" in c for c in readme), "README's Python snippet is not runnable"
    assert any("citegraph ask" in c and "--docs" in c for c in readme), "no runnable `citegraph ask --docs`"
    assert any("citegraph cite" in c for c in readme), "no runnable `citegraph cite`"
    assert any("as_tool(" in c and ".invoke(" in c for c in apps), "docs/apps.md has no runnable as_tool example"
    assert any("citegraph.testing" in c and ".invoke(" in c for c in apps), "docs/apps.md has no runnable citegraph.testing example"
    assert all(lang in ("bash", "python") for _, lang, _ in BLOCKS)


@pytest.fixture(scope="module")
def workdirs(tmp_path_factory):
    """One working folder per documentation file, shared by its blocks (a reader runs them in order),
    with the ids of the blocks already run there."""
    harness = tmp_path_factory.mktemp("harness")
    (harness / "_docs_cli.py").write_text(CLI)
    return {"harness": harness, "dirs": {}}


def _run(block, work: Path, harness: Path) -> subprocess.CompletedProcess:
    ident, lang, code = block
    if lang == "python":
        script = work / f"block_{ident.rsplit(':', 1)[1]}.py"
        script.write_text(PREAMBLE + "\n" + code)
        cmd = [sys.executable, str(script)]
    else:
        script = work / f"block_{ident.rsplit(':', 1)[1]}.sh"
        script.write_text(f'citegraph() {{ "{sys.executable}" -m _docs_cli "$@"; }}\n' + code)
        cmd = ["bash", "-euo", "pipefail", str(script)]
    env = dict(os.environ)
    for k in ("CITEGRAPH_LLM", "CITEGRAPH_VERIFIER", "CITEGRAPH_JUDGE", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        env.pop(k, None)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", ANONYMIZED_TELEMETRY="False",
               PYTHONPATH=os.pathsep.join([str(harness), str(REPO)]))
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{ident} exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    assert proc.stdout.strip(), f"{ident} printed nothing"
    return proc


@pytest.mark.parametrize("block", BLOCKS, ids=[b[0] for b in BLOCKS])
def test_block_runs(block, workdirs, tmp_path_factory):
    """The block exits 0 and prints something, in its file's folder after the file's earlier blocks
    (run first here when this one is selected alone)."""
    fname = block[0].rsplit(":", 1)[0]
    if fname not in workdirs["dirs"]:
        workdirs["dirs"][fname] = (tmp_path_factory.mktemp("docs"), set())
    work, done = workdirs["dirs"][fname]
    for earlier in BLOCKS:
        if earlier is block:
            break
        if earlier[0].rsplit(":", 1)[0] == fname and earlier[0] not in done:
            _run(earlier, work, workdirs["harness"])
            done.add(earlier[0])
    proc = _run(block, work, workdirs["harness"])
    done.add(block[0])
    if re.search(r"citegraph (ask|cite) |\.render\(\)|print\(tool\.invoke", block[2]):  # it prints an answer
        assert "[1]" in proc.stdout, f"{block[0]}: no citation in its output:\n{proc.stdout[-2000:]}"


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (hyphens and underscores kept),
    spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_relative_links_resolve():
    """Every relative link of README.md, docs/, CONTRIBUTING.md and the shipped model cards names an
    existing file, and its #anchor a heading there."""
    link = re.compile(r"\]\(([^)\s]+)\)")
    bad = []
    cards = sorted((REPO / "citegraph" / "assets").rglob("*.md"))
    assert len(cards) >= 2  # the verifier's and lm-check's
    for path in [*doc_files(), REPO / "CONTRIBUTING.md", *cards]:
        text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
        for target in link.findall(text):
            if re.match(r"[a-z]+:", target):
                continue  # http(s):, mailto:
            file, _, anchor = target.partition("#")
            dest = (path.parent / file).resolve() if file else path
            if not dest.exists():
                bad.append(f"{path.relative_to(REPO)}: {target} (no such file)")
                continue
            if anchor and dest.suffix == ".md":
                body = re.sub(r"^```.*?^```", "", dest.read_text(encoding="utf-8"), flags=re.S | re.M)
                slugs = {_slug(h) for h in re.findall(r"^#+ (.+)$", body, re.M)}
                if anchor not in slugs:
                    bad.append(f"{path.relative_to(REPO)}: {target} (no such heading)")
    assert not bad, "\n".join(bad)


def test_each_method_page_draws_the_graph_the_code_builds():
    """docs/methods/*.md carry each method's figure as LangGraph draws the compiled graph
    (scripts/draw_graphs.py): a graph that changes without its figure fails here."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, str(REPO / "scripts" / "draw_graphs.py"), "--check"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr


def test_langgraph_json_describes_each_graph_as_the_registry_does():
    """langgraph dev's assistants (and so its /mcp tools) carry each graph's one-line summary."""
    import json

    from citegraph.graphs.registry import GRAPHS

    graphs = json.loads((REPO / "langgraph.json").read_text())["graphs"]
    assert set(graphs) == set(GRAPHS)
    for name, g in graphs.items():
        assert g["path"] == f"./citegraph/graphs/{name.replace('-', '_')}.py:graph"
        assert g["description"].startswith(GRAPHS[name].summary) and "AttributedAnswer" in g["description"]
