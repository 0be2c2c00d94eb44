"""Node functions, one package per method; each node does one step over (state, runtime)."""
