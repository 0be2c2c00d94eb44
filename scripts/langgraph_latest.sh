#!/usr/bin/env bash
# The graph tests against the newest LangGraph releases on the package index, in a scratch overlay:
# the newest langgraph, langgraph-api and their siblings are installed (without dependencies) into a
# temporary folder put first on PYTHONPATH over .venv, so nothing in .venv changes. Prints the versions
# it tested and pytest's result; exit status is pytest's.
#
#   bash scripts/langgraph_latest.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
overlay=$(mktemp -d)
trap 'rm -rf "$overlay"' EXIT
pkgs="langgraph langgraph-api langgraph-checkpoint langgraph-prebuilt langgraph-sdk langgraph-runtime-inmem \
      langgraph-checkpoint-sqlite langgraph-checkpoint-postgres langchain-core"
"$PY" -m pip install -q --no-deps --upgrade --target "$overlay" $pkgs 2>&1 | grep -v "^WARNING: Location" || true
echo "newest on the index (overlay) vs .venv:"
for p in $pkgs; do
  new=$(PYTHONPATH="$overlay" "$PY" -c "import importlib.metadata as m; print(m.version('$p'))" 2>/dev/null || echo "?")
  old=$("$PY" -c "import importlib.metadata as m; print(m.version('$p'))" 2>/dev/null || echo "?")
  echo "  $p: $new (venv $old)"
done
PYTHONPATH="$overlay" "$PY" -m pytest -q -p no:randomly tests/test_method_graph.py tests/test_resume_context.py \
  tests/test_checkpoint.py tests/test_streaming.py tests/test_studio.py tests/test_context_snapshot.py \
  tests/test_agent_app.py tests/test_trace.py "$@"
