"""The GenerationPrograms parser: whitelist, repairs, typed errors — and a hypothesis fuzz run of
≥ 10,000 generated programs (valid, malformed, hostile) during which eval/exec/os.system are
booby-trapped and compile() may only build ASTs: every program is parsed or rejected with a typed
error, nothing crashes, nothing runs."""

from __future__ import annotations

import builtins
import os
import random
import subprocess
import typing

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citegraph.nodes.genprog.program import (
    MAX_ARGS, MAX_DEPTH, Call, ErrorKind, ParsedProgram, ProgramError, depth, leaf_ids, parse_program, post_order,
)

IDS = {f"S{i}" for i in range(1, 13)}
KINDS = set(typing.get_args(ErrorKind))


# ----------------------------------------------------------------------------- unit tests
def test_parses_nested_program_with_fences_and_bullets():
    text = ('```python\n- fusion(compression(S2, instruction="Keep the date."), S7, '
            'instruction="Combine the facts.")\n* paraphrase(S1)\n1. extract(S4)\n```')
    p = parse_program(text, IDS)
    assert [t.render() for t in p.trees] == [
        "fusion(compression(S2, instruction='Keep the date.'), S7, instruction='Combine the facts.')",
        "paraphrase(S1)", "extract(S4)",
    ]
    assert p.errors == []
    assert p.trees[0].leaves() == ["S2", "S7"]
    assert [path for path, _ in post_order(p.trees[0].root)] == ["0.0.0", "0.0", "0.1", "0"]


@pytest.mark.parametrize("line,fixed", [
    ('paraphrase(S1, instruction="x"', "paraphrase(S1, instruction='x')"),
    ("fusion(S1, S2))", "fusion(S1, S2)"),
    ("compression(S3).", "compression(S3)"),
    ('paraphrase(compression(S1)), instruction="y")', "paraphrase(compression(S1), instruction='y')"),
    ("python fusion(S1, S2)", "fusion(S1, S2)"),
    ('fusion("S1", s2)', "fusion(S1, S2)"),
    ("S5", "extract(S5)"),
])
def test_repairs_common_malformations(line, fixed):
    p = parse_program(f"- {line}", IDS)
    assert [t.render() for t in p.trees] == [fixed], p.errors


@pytest.mark.parametrize("line,kind", [
    ("__import__('os').system('echo pwned')", "unknown_function"),
    ("paraphrase(S1).upper()", "unknown_function"),
    ("paraphrase(S1.text)", "bad_argument"),
    ("fusion(lambda: 1, S2)", "bad_argument"),
    ("fusion([x for x in S1], S2)", "bad_argument"),
    ("paraphrase(S1, instruction=open('f').read())", "bad_instruction"),
    ("paraphrase(S1, style='x')", "bad_keyword"),
    ("fusion(S1, **{'instruction': 'x'})", "bad_keyword"),
    ("fusion(*[S1, S2])", "bad_argument"),
    ("fusion(S1)", "arity"),
    ("paraphrase(S1, S2)", "arity"),
    ("paraphrase(S99)", "unknown_id"),
    ("summarize(S1)", "unknown_function"),
    ("x = paraphrase(S1)", "syntax"),
    ("paraphrase(S1) + paraphrase(S2)", "not_a_call"),
    ("paraphrase(" * 40 + "S1" + ")" * 40, "too_deep"),
    ("paraphrase(" * 100000 + "S1", "too_large"),
    ("paraphrase(S1, instruction='\x00')", "syntax"),
])
def test_rejects_with_typed_error(line, kind):
    p = parse_program(f"- {line}", IDS)
    assert p.trees == []
    assert [e.kind for e in p.errors] == [kind], p.errors
    assert p.errors[0].line == 1


def test_module_spelling_variants_are_repaired_and_argument_cap_is_exact():
    p = parse_program("- Extraction(S1)\n- fuse(paraphrasing(S1), compress(S2))", IDS)
    assert [t.root.fn for t in p.trees] == ["extract", "fusion"] and not p.errors
    assert [a.fn for a in p.trees[1].root.args] == ["paraphrase", "compression"]
    many = ["S1"] * MAX_ARGS
    assert parse_program(f"- fusion({', '.join(many)})", IDS).trees
    assert parse_program(f"- fusion({', '.join(many + ['S2'])})", IDS).errors[0].kind == "too_large"


def test_depth_limit_is_exact():
    ok = "paraphrase(" * MAX_DEPTH + "S1" + ")" * MAX_DEPTH
    bad = "paraphrase(" * (MAX_DEPTH + 1) + "S1" + ")" * (MAX_DEPTH + 1)
    assert depth(parse_program(ok, IDS).trees[0].root) == MAX_DEPTH
    assert parse_program(bad, IDS).errors[0].kind == "too_deep"


def test_prose_and_empty_are_recorded_not_silently_skipped():
    p = parse_program("Here is the program:\n- extract(S1)\nHope this helps!", IDS)
    assert [t.line for t in p.trees] == [2]
    assert [(e.kind, e.line) for e in p.errors] == [("not_a_call", 1), ("not_a_call", 3)]
    assert parse_program("", IDS).errors[0].kind == "empty"
    assert parse_program(None, IDS).errors[0].kind == "empty"  # type: ignore[arg-type]


def test_hostile_program_is_not_executed(tmp_path):
    target = tmp_path / "pwned"
    t = str(target)
    text = "\n".join([
        f"- __import__('pathlib').Path({t!r}).write_text('x')",
        f"- open({t!r}, 'w').write('x')",
        f"- exec(\"open({t!r}, 'w')\")",
        f"- eval(\"open({t!r}, 'w')\")",
        f"- paraphrase(S1, instruction=open({t!r}, 'w').name)",
        f"- fusion(S1, (lambda: open({t!r}, 'w'))())",
        f"- fusion(S1, [open({t!r}, 'w') for _ in 'x'])",
        f"import os; os.system('touch {t}')",
    ])
    p = parse_program(text, IDS)
    assert p.trees == []
    assert len(p.errors) == 8 and all(e.kind in KINDS for e in p.errors)
    assert not target.exists()


def test_parsed_program_round_trips_and_serializes():
    p = parse_program('- fusion(paraphrase(S1, instruction="a \\"q\\""), compression(S2), S3)', IDS)
    again = parse_program(p.render(), IDS)
    assert [t.root for t in again.trees] == [t.root for t in p.trees]
    assert ParsedProgram.model_validate_json(p.model_dump_json()) == p


# ----------------------------------------------------------------------------- fuzzing
FUNCS = ["paraphrase", "compression", "fusion", "extract"]
HOSTILE = [
    "__import__('os').system('touch /tmp/citegraph_fuzz_pwned')",
    "exec('import os')", "eval('1+1')", "compile('1', 'x', 'exec')", "open('/etc/passwd').read()",
    "S1.__class__.__bases__[0].__subclasses__()", "(lambda: 1)()", "[x for x in range(10)]",
    "{k: v for k, v in {}.items()}", "(x for x in ())", "globals()", "breakpoint()", "S1 if True else S2",
    "getattr(S1, 'x')", "paraphrase(S1)[0]", "f'{S1}'", "S1 + S2", "not S1", "await S1", "(yield S1)",
    "paraphrase(*[S1])", "fusion(**{'a': 1})", "paraphrase(S1, instruction=S2)", "paraphrase(S1, instruction=1)",
    "import os", "x = 1", "del S1", "paraphrase(S1); import os", "print(S1)", "type(S1)", "S999",
    "paraphrase(S1, instruction=\"\" + \"x\")", "os.system", "__builtins__", "...", "1e999", "b'x'", "\\x00",
]
NOISE = ["```", "```python", "python", "**", "- ", "* ", "1. ", ")", "(", ",", ".", '"', "'", "\n", " ", "Output:"]


def _tree(r: random.Random, level: int = 0) -> str:
    """A random (mostly valid) call tree as text; ids may be unknown, arity may be wrong."""
    if level >= 3 or r.randint(0, 3) == 0:
        return f"S{r.randint(0, 15)}" if r.randint(0, 9) else f'"S{r.randint(1, 12)}"'
    fn = r.choice(FUNCS)
    n = r.randint(1, 3) if fn == "fusion" else (1 if r.randint(0, 9) else 2)
    args = [_tree(r, level + 1) for _ in range(n)]
    if r.random() < 0.5:
        instr = "".join(r.choice("abc xyz\"'\\()=,") for _ in range(r.randint(0, 12)))
        args.append(f"instruction={instr!r}")
    return f"{fn}({', '.join(args)})"


def _program(seed: int) -> str:
    """A program of 1-4 bullets: valid, malformed (cut / extra or missing brackets / noise),
    hostile (alone or nested in a call), hugely nested or written over several lines; sometimes fenced."""
    r = random.Random(seed)
    lines = []
    for _ in range(r.randint(1, 4)):
        line = _tree(r)
        style = r.randint(0, 7)
        if style == 1:
            cut = r.randint(0, len(line))
            line = line[:cut] + r.choice(NOISE) + line[cut + r.randint(0, 2):]
        elif style == 2:
            h = r.choice(HOSTILE)
            line = h if r.random() < 0.5 else f"fusion({line}, {h})"
        elif style == 3:
            n = r.randint(MAX_DEPTH, 400)
            line = r.choice(FUNCS) + "(" + "paraphrase(" * n + "S1" + ")" * r.randint(0, n + 2)
        elif style == 4:  # pretty-printed over several lines, sometimes hostile or never closed
            if r.random() < 0.3:
                line = f"fusion({line}, {r.choice(HOSTILE)})"
            line = line.replace("(", "(\n    ").replace(", ", ",\n    ")
            if r.random() < 0.3:
                line = line.rstrip(")")
        lines.append(r.choice(["- ", "* ", "", "1. ", "- **"]) + line)
    text = "\n".join(lines)
    return f"```python\n{text}\n```" if r.random() < 0.5 else text


# mostly seeded generators (cheap: one draw per example), plus arbitrary unicode text
PROGRAMS = st.one_of(st.integers(0, 2**32).map(_program), st.integers(0, 2**32).map(_program),
                     st.integers(0, 2**32).map(_program), st.text(max_size=80))


def _check(p: ParsedProgram) -> None:
    assert isinstance(p, ParsedProgram)
    for e in p.errors:
        assert isinstance(e, ProgramError) and e.kind in KINDS
    for t in p.trees:
        assert isinstance(t.root, Call)
        assert set(leaf_ids(t.root)) <= IDS
        assert depth(t.root) <= MAX_DEPTH
        # a parsed tree re-renders to a program that parses back to the same tree
        assert [x.root for x in parse_program(t.render(), IDS).trees] == [t.root]


class _Trapped:
    """While active: eval/exec/os.system/subprocess.Popen raise, compile() may only build ASTs,
    and the parser may not import os/subprocess/pathlib/shutil."""

    def __enter__(self):
        import ast as ast_mod

        self.saved = (builtins.compile, builtins.eval, builtins.exec, builtins.__import__, os.system, subprocess.Popen)
        real_compile, real_import = builtins.compile, builtins.__import__

        def ast_only_compile(source, filename, mode, flags=0, *a, **kw):
            assert flags & ast_mod.PyCF_ONLY_AST, "compile() used for something other than building an AST"
            return real_compile(source, filename, mode, flags, *a, **kw)

        def forbidden(*a, **k):
            raise AssertionError("executed!")

        def imp(name, *a, **k):
            if name.split(".")[0] in ("os", "subprocess", "pathlib", "shutil"):
                raise AssertionError(f"import of {name} while parsing")
            return real_import(name, *a, **k)

        builtins.compile, builtins.eval, builtins.exec, builtins.__import__ = ast_only_compile, forbidden, forbidden, imp
        os.system = forbidden
        subprocess.Popen = forbidden
        return self

    def __exit__(self, *exc):
        builtins.compile, builtins.eval, builtins.exec, builtins.__import__, os.system, subprocess.Popen = self.saved
        return False


def test_fuzz_parser_10000_programs_nothing_executed():
    seen = {"n": 0, "trees": 0, "errors": 0}

    @settings(max_examples=10_000, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(PROGRAMS)
    def run(text):
        seen["n"] += 1
        with _Trapped():
            p = parse_program(text, IDS)
            _check(p)
        seen["trees"] += len(p.trees)
        seen["errors"] += len(p.errors)

    run()
    print(f"fuzz: {seen['n']} programs, {seen['trees']} trees parsed, {seen['errors']} typed errors")
    assert seen["n"] >= 10_000
    assert seen["trees"] > 1000 and seen["errors"] > 1000  # both paths were exercised
    assert not os.path.exists("/tmp/citegraph_fuzz_pwned")


def test_traps_work():
    with _Trapped():
        with pytest.raises(AssertionError):
            eval("1")
        with pytest.raises(AssertionError):
            compile("1", "x", "eval")


def test_multiline_call_is_one_sentence_and_an_unclosed_bullet_does_not_swallow_the_next():
    text = ('```python\n- fusion(\n    compression(S1, instruction="keep the date"),\n    S3,\n'
            '    instruction="combine"\n  )\n- paraphrase(S2\n- extract(S4)\n-\n- extract(S5)\n```')
    r = parse_program(text, {f"S{i}" for i in range(1, 6)})
    assert [(t.line, t.item, t.render()) for t in r.trees] == [
        (2, 1, "fusion(compression(S1, instruction='keep the date'), S3, instruction='combine')"),
        (7, 2, "paraphrase(S2)"),
        (8, 3, "extract(S4)"),
        (10, 5, "extract(S5)"),  # the bare '-' on line 9 is bullet 4
    ]
    assert not r.errors and r.trees[1].repaired
    # without bullets, an unclosed line followed by a complete call at the same indent stays two lines
    r = parse_program("fusion(S1, S2\nextract(S3)")
    assert [t.render() for t in r.trees] == ["fusion(S1, S2)", "extract(S3)"]
