"""Every message the checker reports, written once, so tests can assert them word for word.

The checker decides *that* something is wrong and *where*; this module decides how it reads.
Keeping the wording here (as cel-go does) means one message never drifts into two spellings,
and a change of wording is one edit plus the tests that pin it.

Codes of the language's later stages (PE1xx are syntax errors, from the parser):

=====  =======  ==================================================================
code   stage    meaning
=====  =======  ==================================================================
PE201  checker  unknown name (not a root, a let in scope or a comprehension variable)
PE202  checker  unknown attribute of a record, or an attribute of a non-record
PE203  checker  unknown function, or unknown method for the receiver's type
PE204  checker  operand of the wrong type: operators, ``if``, ``in``, index, literals
PE205  checker  wrong number of arguments to a function or method
PE206  checker  argument of the wrong type to a function or method
PE207  checker  filter/score body, guard or match of the wrong type
PE208  checker  not iterable, or two loop variables over a list or set
PE209  checker  a value that may be null used where a value is needed (use ``??``)
PE210  loader   unknown import
PE211  checker  two filters (or two scores) of one name in a policy or library; a library
                used twice by one policy
PE212  link     library defined twice
PE213  link     ``use`` of an unknown library
PE214  link     ``disable``/``weight`` of a rule the library lacks, or weight on a filter
PE215  checker  unknown score normalisation
PE216  checker  profile names an unknown policy
PE217  checker  ``matches()`` pattern that is not a string literal or not a valid regex
PE218  checker  generator argument outside any/all/count/sum/min/max
PE219  checker  let defined twice or shadowing a root; loop variable bound twice
PE220  checker  match in a library, or a second match in a policy
PE221  checker  let used before it is defined (forward or self reference)
PE222  checker  match reads a value that varies from node to node
PE223  checker  policy or profile defined twice
PE224  checker  overcommit ratio below 1
PE225  checker  a name not visible where it is used: ``gang``/``domain`` outside a gang block,
                ``node`` (or a let reading it) inside one
PE226  checker  gang block misplaced or malformed: in a library, twice in a policy, two
                ``within``, an unknown topology level
PE227  checker  overcommit of an incompressible resource, or a ``max_load`` outside 0..1
PE228  checker  a preempt guard that reads a value varying from node to node
PE229  checker  a rule whose static cost bound is above ``MAX_RULE_COST`` (a policy that would
                stall every scheduling cycle: refused, not merely linted)
PE230  checker  ``select`` malformed: an unknown mode, a key missing or given to ``random``, a
                key that cannot be ordered, a second ``select``, a ``select`` in a library
PE231  checker  ``device`` malformed: an unknown mode, shapes missing or given to a mode that
                takes none, shapes of the wrong type or reading the node, a second ``device``,
                a ``device`` in a library
=====  =======  ==================================================================
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from policyengine.lang.types import QUANTITY, STRING, Type, non_null

AGGREGATE_NAMES = "any, all, count, sum, min or max"
_CONVERT_QUANTITY = "convert the string first: quantity(text) ?? 0"


@dataclass(frozen=True)
class Message:
    """A finding's code, text and hint; the checker adds the span and severity."""

    code: str
    text: str
    hint: str | None = None


def _did_you_mean(suggestion: str | None) -> str | None:
    return f"did you mean {suggestion}?" if suggestion else None


def _listing(names: Iterable[str], limit: int = 12) -> str:
    names = list(names)
    if not names:
        return "none"
    shown = ", ".join(names[:limit])
    return shown + (", …" if len(names) > limit else "")


# --- names, attributes, functions ------------------------------------------------------


def unknown_name(name: str, suggestion: str | None, in_scope: Iterable[str]) -> Message:
    hint = _did_you_mean(suggestion) or f"names in scope here: {_listing(in_scope)}"
    return Message("PE201", f"unknown name '{name}'", hint)


def function_used_as_value(name: str) -> Message:
    return Message(
        "PE201", f"'{name}' is a function, not a value", f"call it with its arguments: {name}(…)"
    )


def unknown_attribute(
    record: str, attribute: str, obj_text: str, suggestion: str | None, fields: Iterable[str]
) -> Message:
    hint = (
        f"did you mean {obj_text}.{suggestion}?"
        if suggestion
        else f"attributes of {record}: {_listing(fields)}"
    )
    return Message("PE202", f"{record} has no attribute '{attribute}'", hint)


def no_attributes(type_: Type, attribute: str, obj_text: str, is_map: bool) -> Message:
    hint = f'index a map with brackets: {obj_text}["{attribute}"]' if is_map else None
    return Message("PE202", f"{type_} has no attributes (asked for '{attribute}')", hint)


def unknown_function(name: str, suggestion: str | None) -> Message:
    hint = (
        _did_you_mean(suggestion)
        or "see the language reference for the builtin and schema functions"
    )
    return Message("PE203", f"unknown function '{name}'", hint)


def unknown_method(
    type_: Type, name: str, suggestion: str | None, methods: Iterable[str]
) -> Message:
    methods = list(methods)
    if suggestion:
        hint: str | None = f"did you mean {suggestion}()?"
    elif name == "contains" and not methods:
        hint = "test membership with 'in': x in xs"
    elif methods:
        hint = f"methods of {type_}: {_listing(methods)}"
    else:
        hint = None
    return Message("PE203", f"{type_} has no method '{name}'", hint)


# --- operators -------------------------------------------------------------------------


def bad_operands(op: str, left: Type, right: Type) -> Message:
    pair = {non_null(left), non_null(right)}
    hint = None
    if op == "*" and pair == {QUANTITY}:
        hint = "multiply a quantity by a number; divide two quantities for a ratio"
    elif op == "%":
        hint = "'%' takes two ints"
    elif pair == {STRING, QUANTITY}:
        hint = _CONVERT_QUANTITY
    elif op == "+" and STRING in pair:
        hint = "convert the other side first: string(value)"
    return Message("PE204", f"cannot apply '{op}' to {left} and {right}", hint)


def bad_operand(op: str, operand: Type, expected: str) -> Message:
    return Message("PE204", f"'{op}' needs {expected}, not {operand}")


def not_comparable(op: str, left: Type, right: Type) -> Message:
    pair = {non_null(left), non_null(right)}
    hint = _CONVERT_QUANTITY if pair == {STRING, QUANTITY} else None
    return Message("PE204", f"cannot compare {left} with {right} using '{op}'", hint)


def bad_membership(op: str, left: Type, right: Type) -> Message:
    return Message(
        "PE204",
        f"cannot test {left} '{op}' {right}",
        "the right of 'in' is a list, set or map (its keys) of the left's type, or a string",
    )


def not_a_condition(where: str, found: Type) -> Message:
    return Message("PE204", f"the condition of {where} must be bool, not {found}")


def branches_differ(then: Type, otherwise: Type) -> Message:
    return Message(
        "PE204",
        f"the branches of 'if' have different types: {then} and {otherwise}",
        "make both branches the same type",
    )


def bad_default(left: Type, right: Type) -> Message:
    return Message(
        "PE204",
        f"the default after '??' must fit {left}, not {right}",
        "give a default of the same type as the value",
    )


def items_differ(kind: str, first: Type, other: Type) -> Message:
    return Message("PE204", f"{kind} items have different types: {first} and {other}")


def bad_index(container: Type, wanted: str, found: Type) -> Message:
    return Message("PE204", f"{container} is indexed by {wanted}, not {found}")


def not_indexable(container: Type) -> Message:
    return Message("PE204", f"{container} cannot be indexed", "only maps and lists can be indexed")


# --- calls -----------------------------------------------------------------------------


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def wrong_arity(callee: str, expected: int | str, got: int) -> Message:
    wanted = _plural(expected, "argument") if isinstance(expected, int) else expected
    return Message("PE205", f"{callee}() takes {wanted}, got {got}")


def bad_argument(callee: str, position: int, expected: str, found: Type) -> Message:
    return Message("PE206", f"argument {position} of {callee}() must be {expected}, not {found}")


def bad_elements(callee: str, expected: str, found: Type) -> Message:
    hint = (
        f"each element of {callee}() is a condition: {callee}(x > 0 for x in xs)"
        if expected == "bool"
        else None
    )
    return Message("PE206", f"{callee}() needs {expected} elements, not {found}", hint)


def arguments_differ(callee: str, first: Type, other: Type) -> Message:
    return Message(
        "PE206", f"the arguments of {callee}() have different types: {first} and {other}"
    )


def generator_outside_aggregate() -> Message:
    return Message(
        "PE218",
        "a generator can only be the argument of " + AGGREGATE_NAMES,
        "to build a list, put it in brackets: [x for x in xs]",
    )


def pattern_not_literal() -> Message:
    return Message(
        "PE217",
        "the pattern of matches() must be a string literal",
        "patterns are compiled once, when the policy is loaded",
    )


def invalid_pattern(error: str) -> Message:
    return Message(
        "PE217",
        f"invalid regular expression: {error}",
        "the pattern is a Python regular expression (module re)",
    )


# --- iteration -------------------------------------------------------------------------


def not_iterable(found: Type) -> Message:
    return Message("PE208", f"cannot iterate over {found}", "iterate over a list, set or map")


def two_targets_over(found: Type) -> Message:
    return Message(
        "PE208",
        f"{found} is iterated with one variable",
        "two variables (k, v) iterate a map's keys and values",
    )


def target_twice(name: str) -> Message:
    return Message("PE219", f"loop variable '{name}' is bound twice")


# --- nulls -----------------------------------------------------------------------------


def may_be_null(found: Type, needed_by: str, example: str | None) -> Message:
    # Records and sets have no literal to default to, so there is nothing useful to suggest.
    hint = f"give it a default with '??': {example}" if example else None
    return Message("PE209", f"this value may be null ({found}); {needed_by} needs a value", hint)


# --- rules and statements --------------------------------------------------------------


def bad_rule_body(kind: str, rule: str, found: Type) -> Message:
    if kind == "filter":
        return Message(
            "PE207",
            f"the body of filter {rule} must be bool or list<string>, not {found}",
            "a filter keeps a node when its body is true or its list of reasons is empty",
        )
    return Message(
        "PE207",
        f"the body of score {rule} must be a number (int, float or quantity), not {found}",
    )


def bad_guard(kind: str, rule: str, found: Type) -> Message:
    return Message("PE207", f"the guard of {kind} {rule} must be bool, not {found}")


def bad_match(found: Type) -> Message:
    return Message("PE207", f"a match must be bool, not {found}")


def match_reads_per_node(what: str) -> Message:
    return Message(
        "PE222",
        f"a match cannot read {what}, which varies from node to node",
        "a match is decided once, before any node is considered; move this into a filter",
    )


def match_in_library(library: str) -> Message:
    return Message(
        "PE220",
        f"library {library} cannot have a match",
        "put the match in the policies that use this library",
    )


def second_match(policy: str) -> Message:
    return Message(
        "PE220", f'policy "{policy}" has two matches', "combine them into one with 'and'"
    )


def duplicate_rule(owner: str, kind: str, rule: str, first_at: str) -> Message:
    return Message(
        "PE211",
        f"{kind} {rule} is defined twice in {owner}",
        f"the first definition is at {first_at}",
    )


def library_used_twice(library: str, policy: str, first_at: str) -> Message:
    return Message(
        "PE211",
        f'library {library} is used twice in policy "{policy}"',
        f"the first use is at {first_at}; merge the two uses",
    )


def unknown_normalizer(name: str, suggestion: str | None, known: Iterable[str]) -> Message:
    hint = _did_you_mean(suggestion) or f"known normalisations: {_listing(sorted(known))}"
    return Message("PE215", f"unknown normalisation '{name}'", hint)


def unknown_profile_policy(
    profile: str, policy: str, suggestion: str | None, known: Iterable[str]
) -> Message:
    hint = (
        f'did you mean "{suggestion}"?'
        if suggestion
        else f"policies defined here: {_listing(sorted(known))}"
    )
    return Message("PE216", f'profile "{profile}" names unknown policy "{policy}"', hint)


def let_twice(name: str, first_at: str) -> Message:
    return Message(
        "PE219", f"let {name} is defined twice", f"the first definition is at {first_at}"
    )


def let_shadows_root(name: str) -> Message:
    return Message("PE219", f"let {name} shadows the root {name}", "give the let another name")


def let_before_definition(name: str) -> Message:
    return Message(
        "PE221",
        f"let {name} is used before it is defined",
        f"move 'let {name}' above the let that uses it",
    )


def let_refers_to_itself(name: str) -> Message:
    return Message("PE221", f"let {name} refers to itself", "a let cannot use its own value")


def duplicate_policy(name: str, first_at: str) -> Message:
    return Message(
        "PE223", f'policy "{name}" is defined twice', f"the first definition is at {first_at}"
    )


def duplicate_profile(name: str, first_at: str) -> Message:
    return Message(
        "PE223", f'profile "{name}" is defined twice', f"the first definition is at {first_at}"
    )


def incompressible_overcommit(resource: str, compressible: Iterable[str]) -> Message:
    allowed = sorted(compressible)
    hint = (
        "only " + ", ".join(allowed) + " can be overcommitted"
        if allowed
        else "this schema declares no compressible resources"
    )
    return Message("PE227", f"{resource} is not compressible and cannot be overcommitted", hint)


def max_load_out_of_range(resource: str, text: str) -> Message:
    return Message(
        "PE227",
        f"max_load {text} for {resource} is not between 0 and 1",
        "max_load is a fraction of the node's allocatable, e.g. 0.8",
    )


def overcommit_below_one(resource: str, ratio: str) -> Message:
    return Message(
        "PE224",
        f"overcommit ratio {ratio} for {resource} is below 1",
        "a ratio of 1 means no overcommit; ratios below 1 would shrink the node",
    )


def gang_root_outside(name: str) -> Message:
    return Message(
        "PE225",
        f"'{name}' is only visible inside a gang block",
        "gang rules judge a whole gang against a topology domain: gang { filter ... }",
    )


def hidden_in_gang(what: str) -> Message:
    return Message(
        "PE225",
        f"{what} is not visible inside a gang block",
        "gang rules see pod (the gang's first pending member), gang and domain; "
        "per-node rules belong outside the gang block",
    )


def gang_in_library(library: str) -> Message:
    return Message(
        "PE226",
        f"library {library} has a gang block",
        "a gang block belongs in the policy that governs the gang's pods",
    )


def second_gang(policy: str) -> Message:
    return Message(
        "PE226", f'policy "{policy}" has a second gang block', "merge them into one gang block"
    )


def second_within() -> Message:
    return Message(
        "PE226",
        "a gang block has a second within",
        "list every level in one within, lowest first: within nvlink_domain, rack",
    )


def unknown_level(name: str, suggestion: str | None, known: Iterable[str]) -> Message:
    hint = _did_you_mean(suggestion) or f"topology levels: {_listing(known)}"
    return Message("PE226", f"unknown topology level '{name}'", hint)


def preempt_guard_reads_per_node(what: str) -> Message:
    return Message(
        "PE228",
        f"a preempt guard cannot read {what}, which varies from node to node",
        "the guard decides whether the rule applies to the pod; judge nodes and victims in the body",
    )


def bad_preempt_guard(found: Type) -> Message:
    return Message("PE207", f"the guard of a preempt rule must be bool, not {found}")


def bad_preempt_body(found: Type) -> Message:
    return Message(
        "PE207",
        f"the body of a preempt rule must be bool, not {found}",
        "a preempt rule is true for each running pod (victim) the pod may evict",
    )


def cost_over_limit(kind: str, rule: str, bound: int, limit: int) -> Message:
    return Message(
        "PE229",
        f"{kind} {rule} has a static cost bound of {bound:,}, above the limit of {limit:,} "
        "a scheduler accepts",
        "every node runs it for every pod: iterate over smaller collections, nest fewer "
        "comprehensions, or precompute in a let",
    )


SELECT_MODES = ("random", "lowest", "highest")


def unknown_select_mode(mode: str) -> Message:
    return Message(
        "PE230",
        f"unknown select mode {mode}",
        "select random, select lowest { KEY } or select highest { KEY }",
    )


def select_needs_key(mode: str) -> Message:
    return Message(
        "PE230",
        f"select {mode} needs a key",
        f"select {mode} {{ node.name }}: the tied node with the {mode} key wins",
    )


def select_random_key() -> Message:
    return Message(
        "PE230",
        "select random takes no key",
        "to order tied nodes by a key, write select lowest { KEY } or select highest { KEY }",
    )


def bad_select_key(mode: str, found: Type) -> Message:
    return Message(
        "PE230",
        f"the key of select {mode} must be int, float, quantity or string, not {found}",
        "tied nodes are ordered by the key",
    )


def second_select(policy: str) -> Message:
    return Message("PE230", f'policy "{policy}" has a second select', "keep one select")


def select_in_library(library: str) -> Message:
    return Message(
        "PE230",
        f"library {library} has a select",
        "a select belongs in the policy that governs the pods",
    )


DEVICE_MODES = ("best_fit", "spread", "least_fragmentation")


def unknown_device_mode(mode: str) -> Message:
    return Message(
        "PE231",
        f"unknown device mode {mode}",
        "device best_fit, device spread or device least_fragmentation { SHAPES }",
    )


def device_needs_shapes(mode: str) -> Message:
    return Message(
        "PE231",
        f"device {mode} needs the shapes it weighs",
        f"device {mode} {{ learned_gpu_shapes(0.95) }}, or a list of shape maps",
    )


def device_takes_no_shapes(mode: str) -> Message:
    return Message(
        "PE231",
        f"device {mode} takes no shapes",
        "only device least_fragmentation { SHAPES } weighs shapes",
    )


def bad_device_shapes(found: Type) -> Message:
    return Message(
        "PE231",
        f"the shapes of device least_fragmentation must be list<map<string, quantity>>, not {found}",
        'a list of shape maps, e.g. [{"cores": 50, "cpu": 4, "weight": 3}, {"gpus": 1}]',
    )


def device_shapes_read_per_node(what: str) -> Message:
    return Message(
        "PE231",
        f"the shapes of device least_fragmentation cannot read {what}, which varies from node "
        "to node",
        "the shapes are the same for every node: compute them from the pod and the cluster",
    )


def second_device(policy: str) -> Message:
    return Message("PE231", f'policy "{policy}" has a second device', "keep one device")


def device_in_library(library: str) -> Message:
    return Message(
        "PE231",
        f"library {library} has a device",
        "a device choice belongs in the policy that governs the pods",
    )
