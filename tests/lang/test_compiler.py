"""The compiler: its passes, the program it builds, and the cache in front of it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from policyengine.diagnostics import Diagnostic, Severity, Span
from policyengine.lang import compiler
from policyengine.lang.cache import ProgramCache
from policyengine.lang.compiler import (
    PASSES,
    Compilation,
    CompileResult,
    Program,
    compile_paths,
    compile_texts,
    compile_unit,
    run,
)
from policyengine.lang.loader import load_texts
from policyengine.lang.runtime import Env, FilterVerdict
from tests.lang.fake_schema import PROBING_SCHEMA as SCHEMA
from tests.lang.widget_schema import order, widget


def compiled(source: str, name: str = "main.sched") -> Program:
    result = compile_texts({name: source}, SCHEMA)
    assert result.program is not None, result.diagnostics
    return result.program


def env(program: Program, context: Any = None, **roots: Any) -> Env:
    roots.setdefault("order", order())
    roots.setdefault("widget", widget())
    return program.env(roots, context if context is not None else {})


# --- passes --------------------------------------------------------------------------------


def test_the_passes_are_one_ordered_list() -> None:
    assert [name for name, _ in PASSES] == ["load", "link", "check", "plan"]
    result = compile_texts({"a.sched": 'policy "p" { filter f { true } }'}, SCHEMA)
    assert result.passes == ("load", "link", "check", "plan")
    assert result.ok and result.diagnostics == ()


@pytest.mark.parametrize(
    ("source", "last_pass", "code"),
    [
        ('policy "p" { filter f { widget.count = 1 } }', "load", "PE103"),
        ('policy "p" { use nowhere }', "link", "PE213"),
        ('policy "p" { filter f { widget.nothing > 1 } }', "check", None),
    ],
    ids=["load", "link", "check"],
)
def test_compiling_stops_after_the_first_pass_with_errors(
    source: str, last_pass: str, code: str | None
) -> None:
    result = compile_texts({"a.sched": source}, SCHEMA)
    assert result.program is None
    assert result.passes[-1] == last_pass
    assert result.diagnostics and all(d.span.file == "a.sched" for d in result.diagnostics)
    if code is not None:
        assert code in {d.code for d in result.diagnostics}


def _error(message: str) -> Diagnostic:
    return Diagnostic("PE999", Severity.ERROR, message, Span("x", 1, 1, 1, 2))


def test_run_calls_each_pass_with_the_state_and_stops_on_an_error() -> None:
    calls: list[str] = []

    def recorder(name: str, found: Iterable[Diagnostic] = ()) -> Any:
        def run_pass(state: Compilation) -> Iterable[Diagnostic]:
            assert isinstance(state, Compilation)
            calls.append(name)
            return found

        return (name, run_pass)

    warning = Diagnostic("PE998", Severity.WARNING, "just saying", Span("x", 2, 1, 2, 2))
    state = Compilation(SCHEMA, lambda: load_texts({}))
    result = run(
        state,
        [recorder("one", [warning]), recorder("two", [_error("bad")]), recorder("three")],
    )
    assert calls == ["one", "two"]
    assert result.passes == ("one", "two")
    assert result.program is None
    assert [d.message for d in result.diagnostics] == ["bad", "just saying"]  # sorted by place


def test_warnings_do_not_stop_compiling() -> None:
    # A warning from an extra pass leaves the program in place.
    def warn(state: Compilation) -> Iterable[Diagnostic]:
        return [Diagnostic("PE998", Severity.WARNING, "hm", Span("a.sched", 1, 1, 1, 2))]

    state = Compilation(SCHEMA, lambda: load_texts({"a.sched": 'policy "p" { }'}))
    result = run(state, [*PASSES, ("warn", warn)])
    assert result.program is not None
    assert [d.code for d in result.diagnostics] == ["PE998"]


def test_three_entry_points_agree(tmp_path: Path) -> None:
    source = 'policy "p" { filter f { widget.count > 1 } }'
    (tmp_path / "a.sched").write_text(source)
    by_path = compile_paths([tmp_path], SCHEMA)
    # A file is named within its directory: the texts that agree with it name it so too.
    by_text = compile_texts({"a.sched": source}, SCHEMA)
    by_unit = compile_unit(load_texts({"a.sched": source}), SCHEMA)
    digests = {r.program.digest for r in (by_path, by_text, by_unit) if r.program is not None}
    assert len(digests) == 1


# --- the program ---------------------------------------------------------------------------

POLICIES = """
library lib {
  let big = widget.count > 2
  filter big_enough { big } reason "widget {widget.name} has {widget.count}"
  filter spare_parts { count(p.spare for p in widget.parts) > 0 }
  score heavy weight 2 normalize max { widget.weight * 10 }
  score light { 1 }
  overcommit cpu 2
}

policy "urgent" {
  match order.priority > 5
  use lib { disable spare_parts  weight light 7 }
  filter pod_only { order.priority < 100 }
  overcommit cpu 1.5
}

policy "anything" {
  use lib
  score own weight 3 normalize minmax { widget.count }
}
"""


def test_policies_rules_weights_and_library_adjustments() -> None:
    program = compiled(POLICIES)
    urgent, anything = program.policies
    assert (urgent.name, anything.name) == ("urgent", "anything")
    assert [r.qualified_name for r in urgent.rules] == [
        "lib.big_enough",
        "lib.heavy",
        "lib.light",
        "pod_only",
    ]
    assert [r.qualified_name for r in urgent.filters] == ["lib.big_enough", "pod_only"]
    assert [(r.name, r.weight, r.normalize) for r in urgent.scores] == [
        ("heavy", 2, "max"),
        ("light", 7, "none"),
    ]
    assert [r.library for r in urgent.rules] == ["lib", "lib", "lib", None]
    assert [(r.qualified_name, r.weight) for r in anything.scores] == [
        ("lib.heavy", 2),
        ("lib.light", 1),
        ("own", 3),
    ]
    assert [r.kind for r in anything.rules] == ["filter", "filter", "score", "score", "score"]
    assert urgent.overcommit == {"cpu": 1.5}
    assert anything.overcommit == {"cpu": 2.0}
    assert all(r.cost is not None and r.cost > 0 for r in urgent.rules)
    assert urgent.span.line == 11


def test_filters_and_scores_evaluate() -> None:
    program = compiled(POLICIES)
    anything = program.policies[1]
    big, spare = anything.filters
    assert big.filter(env(program)) == FilterVerdict(True)
    assert big.filter(env(program, widget=widget(name="w9", count=1))) == FilterVerdict(
        False, ("widget w9 has 1",)
    )
    assert spare.filter(env(program)).reasons == ("rejected by lib.spare_parts",)
    heavy, light, own = anything.scores
    assert heavy.score(env(program)).value == 10.0
    assert light.score(env(program)).value == 1.0
    assert own.score(env(program)).value == 4.0
    with pytest.raises(TypeError):
        heavy.filter(env(program))


def test_a_list_filter_rejects_with_its_reasons() -> None:
    program = compiled('policy "p" { filter fit { shortfall(order, widget) } }')
    rule = program.policies[0].filters[0]
    assert rule.filter(env(program)) == FilterVerdict(True)
    lacking = widget(capacity={"cpu": Fraction(1, 2)})
    assert rule.filter(env(program, widget=lacking)) == FilterVerdict(False, ("short of cpu",))


def test_a_score_guard_excludes_the_node() -> None:
    program = compiled('policy "p" { score s when widget.count > 10 { widget.count } }')
    rule = program.policies[0].scores[0]
    assert rule.score(env(program)).value is None
    assert rule.score(env(program, widget=widget(count=11))).value == 11.0


def test_default_profile_runs_every_policy_in_load_order() -> None:
    program = compiled(POLICIES)
    assert dict(program.profiles) == {"policyengine": ("urgent", "anything")}
    urgent_order = env(program, order=order(priority=9))
    calm_order = env(program, order=order(priority=1))
    assert program.governing_policy("policyengine", urgent_order).name == "urgent"  # type: ignore[union-attr]
    # "anything" has no match: it matches every pod.
    assert program.governing_policy("policyengine", calm_order).name == "anything"  # type: ignore[union-attr]
    assert program.governing_policy("other-scheduler", calm_order) is None


def test_declared_profiles_choose_the_first_matching_policy() -> None:
    sources = {
        "a.sched": POLICIES,
        "profiles.sched": (
            'profile "gpu" { policies "urgent" }\nprofile "all" { policies "anything", "urgent" }\n'
        ),
    }
    result = compile_texts(sources, SCHEMA)
    program = result.program
    assert program is not None, result.diagnostics
    assert dict(program.profiles) == {"gpu": ("urgent",), "all": ("anything", "urgent")}
    calm, urgent = env(program, order=order(priority=1)), env(program, order=order(priority=9))
    assert program.governing_policy("gpu", calm) is None
    assert program.governing_policy("gpu", urgent).name == "urgent"  # type: ignore[union-attr]
    assert program.governing_policy("all", urgent).name == "anything"  # type: ignore[union-attr]
    assert program.governing_policy("policyengine", urgent) is None


@pytest.mark.parametrize(
    ("rule", "per_node"),
    [
        ("filter f { order.priority > 1 }", False),
        ("filter f { widget.count > 1 }", True),
        ("filter f when widget.count > 1 { order.priority > 1 }", True),
        ('filter f { order.priority > 1 } reason "on {widget.name}"', True),
        ('filter f { order.priority > 1 } reason "for {order.name}"', False),
        ("filter f { pod_level > 1 }", False),
        ("filter f { node_level > 1 }", True),
        ('filter f { score_of("x") > 1 }', True),
        ("filter f { fits(order, widget) }", True),
        ('filter f { probe(order.name) == "o1" }', False),
        ('filter f { any(t == "x" for t in order.tags) }', False),
        ("filter f { any(p.spare for p in widget.parts) }", True),
        ("score s { order.priority }", False),
        ("score s when widget.count > 0 { order.priority }", True),
        ("score s { node_level }", True),
    ],
)
def test_per_node_detection(rule: str, per_node: bool) -> None:
    source = (
        'policy "p" {\n'
        "  let pod_level = order.priority * 2\n"
        "  let node_level = widget.count + pod_level\n"
        f"  {rule}\n"
        "}\n"
    )
    result = compile_texts({"p.sched": source}, SCHEMA)
    assert result.program is not None, result.diagnostics
    compiled_rule = result.program.policies[0].rules[0]
    assert compiled_rule.per_node is per_node
    # The checker's own per-node table agrees with the planner's.
    unit = result.unit
    assert unit is not None
    from policyengine.lang.checker import check

    checked = check(unit, SCHEMA)
    statement = unit.policies[0].rules[0]
    parts = [statement.guard, statement.body, getattr(statement, "reason", None)]
    assert any(checked.per_node.get(id(p), False) for p in parts if p is not None) is per_node


# --- lets ----------------------------------------------------------------------------------

LETS = """
policy "p" {
  let per_widget = probe(widget.count)
  let per_order = probe(order.priority)
  filter a { per_widget > 0 and per_order > 0 }
  filter b { per_widget > 1 }
  score c { per_widget + per_order }
  score d { per_order }
}
"""


def test_a_let_is_evaluated_once_per_env() -> None:
    program = compiled(LETS)
    context: dict[str, Any] = {}
    e = env(program, context, widget=widget(count=4), order=order(priority=9))
    policy = program.policies[0]
    for rule in policy.filters:
        assert rule.filter(e).passed
    for rule in policy.scores:
        rule.score(e)
    assert sorted(context["probe"]) == [4, 9]


def test_pod_level_lets_are_shared_by_derived_envs() -> None:
    program = compiled(LETS)
    context: dict[str, Any] = {}
    pod_env = env(program, context, order=order(priority=9))
    policy = program.policies[0]
    for count in (1, 2, 3):
        node_env = pod_env.derive(widget=widget(count=count))
        for rule in policy.scores:
            rule.score(node_env)
    assert context["probe"].count(9) == 1  # the order's let: once for all widgets
    assert [v for v in context["probe"] if v != 9] == [1, 2, 3]
    # Another order starts afresh.
    other = pod_env.derive(order=order(priority=8), widget=widget(count=5))
    assert policy.scores[1].score(other).value == 8.0


# --- digest and cache ----------------------------------------------------------------------


def test_digest_names_the_sources() -> None:
    a = compiled('policy "p" { filter f { true } }')
    b = compiled('policy "p" { filter f { true } }')
    c = compiled('policy "p" { filter f { false } }')
    d = compiled('policy "p" { filter f { true } }', name="other.sched")
    assert a.digest == b.digest
    assert len({a.digest, c.digest, d.digest}) == 3
    assert a.version == a.digest[:12]
    assert dict(a.sources) == {"main.sched": 'policy "p" { filter f { true } }'}


def test_cache_hit_returns_the_identical_object() -> None:
    cache = ProgramCache()
    texts = {"a.sched": POLICIES}
    first = cache.compile_texts(texts, SCHEMA)
    second = cache.compile_texts(dict(texts), SCHEMA)
    assert second is first
    assert (cache.hits, cache.misses) == (1, 1)
    changed = cache.compile_texts({"a.sched": POLICIES + "\n# changed\n"}, SCHEMA)
    assert changed is not first
    assert changed.program is not None and first.program is not None
    assert changed.program.digest != first.program.digest


def test_cache_keys_on_the_schema_too() -> None:
    from tests.lang.fake_schema import SCHEMA as PLAIN

    cache = ProgramCache()
    texts = {"a.sched": 'policy "p" { filter f { true } }'}
    assert cache.compile_texts(texts, SCHEMA) is not cache.compile_texts(texts, PLAIN)


def test_failed_compiles_are_cached_with_their_diagnostics() -> None:
    cache = ProgramCache()
    texts = {"a.sched": 'policy "p" { filter f { widget.nothing } }'}
    first = cache.compile_texts(texts, SCHEMA)
    assert first.program is None and first.diagnostics
    assert cache.compile_texts(texts, SCHEMA) is first


def test_cache_is_thread_safe_and_builds_once(monkeypatch: pytest.MonkeyPatch) -> None:
    builds: list[int] = []
    real = compiler.compile_texts

    def slow_compile(texts: Any, schema: Any) -> CompileResult:
        builds.append(1)
        time.sleep(0.05)  # widen the window in which the threads race
        return real(texts, schema)

    monkeypatch.setattr(compiler, "compile_texts", slow_compile)
    cache = ProgramCache()
    texts = {"a.sched": POLICIES}
    results: list[CompileResult] = []
    barrier = threading.Barrier(16)

    def worker() -> None:
        barrier.wait()
        results.append(cache.compile_texts(texts, SCHEMA))

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 16
    assert all(result is results[0] for result in results)
    assert len(builds) == 1


def test_cache_rereads_imported_files(tmp_path: Path) -> None:
    library = tmp_path / "lib.sched"
    library.write_text("library lib { filter f { widget.count > 1 } }")
    entry = tmp_path / "main.sched"
    entry.write_text('import "lib.sched"\npolicy "p" { use lib }')
    cache = ProgramCache()
    first = cache.compile_paths([entry], SCHEMA)
    assert first.program is not None, first.diagnostics
    assert cache.compile_paths([entry], SCHEMA) is first
    library.write_text("library lib { filter f { widget.count > 100 } }")
    second = cache.compile_paths([entry], SCHEMA)
    assert second is not first
    assert second.program is not None
    assert second.program.digest != first.program.digest
    rule = second.program.policies[0].filters[0]
    assert rule.filter(env(second.program)).passed is False
    # Texts handed in by name (a ConfigMap's keys) import among themselves, never from disk.
    texts = {str(entry): entry.read_text()}
    from_texts = cache.compile_texts(texts, SCHEMA)
    assert [d.code for d in from_texts.diagnostics] == ["PE210"]
    texts[str(library)] = library.read_text()
    assert cache.compile_texts(texts, SCHEMA).program is not None


def test_cache_of_a_directory_sees_new_files(tmp_path: Path) -> None:
    (tmp_path / "a.sched").write_text('policy "a" { }')
    cache = ProgramCache()
    first = cache.compile_paths([tmp_path], SCHEMA)
    assert cache.compile_paths([tmp_path], SCHEMA) is first
    (tmp_path / "b.sched").write_text('policy "b" { }')
    second = cache.compile_paths([tmp_path], SCHEMA)
    assert second is not first
    assert second.program is not None
    assert [p.name for p in second.program.policies] == ["a", "b"]


def test_a_missing_path_is_a_diagnostic_not_a_cache_entry(tmp_path: Path) -> None:
    cache = ProgramCache()
    result = cache.compile_paths([tmp_path / "nope.sched"], SCHEMA)
    assert result.program is None
    assert [d.code for d in result.diagnostics] == ["PE001"]
    assert len(cache) == 0


# --- speed ---------------------------------------------------------------------------------


def big_policy(rules: int) -> str:
    lines = ['policy "big" {', "  let pri = order.priority"]
    for i in range(rules // 2):
        lines.append(
            f"  filter f{i} when pri > {i % 7} {{ widget.count >= {i} and "
            f'(widget.labels["zone"] ?? "") != "z{i}" }} reason "count {{widget.count}} < {i}"'
        )
        lines.append(
            f'  score s{i} weight {1 + i % 5} {{ 100 * ((widget.capacity["cpu"] ?? 0) - '
            f'(order.wants["cpu"] ?? 0)) / {i + 1} + sum(p.size for p in widget.parts) }}'
        )
    lines.append("}")
    return "\n".join(lines) + "\n"


def test_a_200_rule_policy_compiles_and_is_served_from_the_cache() -> None:
    # How fast is measured in benchmarks/ (compile scenario), never here.
    texts = {"big.sched": big_policy(200)}
    cache = ProgramCache()
    result = cache.compile_texts(texts, SCHEMA)
    assert result.program is not None, result.diagnostics[:3]
    assert len(result.program.policies[0].rules) == 200
    for _ in range(3):
        assert cache.compile_texts(texts, SCHEMA) is result


def test_an_env_is_built_from_root_values_by_name() -> None:
    program = compiled('policy "p" { filter f { widget.count > order.priority } }')
    rule = program.policies[0].filters[0]
    assert rule.filter(Env({"order": order(), "widget": widget()}, {})).passed
    assert not rule.filter(Env({"order": order(priority=9), "widget": widget()})).passed
    # A root left out is null; reading it is a reported error, not an exception.
    assert rule.filter(Env({"order": order()})).error is not None
