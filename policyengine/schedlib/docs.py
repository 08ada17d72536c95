"""The README's attribute reference, generated from the declarations so the two never drift.

``python -m policyengine.schedlib.docs`` prints the Markdown; a test holds the README's
"Attribute reference" section equal to it. The builtins of FGD fragmentation are documented
with the GPU replay (``docs/gpu-replay.md``, ``python -m policyengine.schedlib.docs
fragmentation``), in a block a test holds equal the same way.
"""

from __future__ import annotations

from collections.abc import Iterable

from policyengine.lang.schema import Schema
from policyengine.lang.types import RecordType
from policyengine.schedlib import default_schema
from policyengine.schedlib.gangs import GANG_RECORDS
from policyengine.schedlib.records import RECORDS

BEGIN = "<!-- attribute-reference:begin -->"
END = "<!-- attribute-reference:end -->"
FRAGMENTATION_BEGIN = "<!-- fragmentation-reference:begin -->"
FRAGMENTATION_END = "<!-- fragmentation-reference:end -->"
# Documented in docs/gpu-replay.md rather than in the README's reference.
FRAGMENTATION_FUNCTIONS = (
    "gpu_fragmentation_fgd",
    "gpu_fragmentation_growth",
    "gpu_device",
    "learned_gpu_shapes",
)


def _function_rows(
    schema: Schema, names: Iterable[str] | None, exclude: Iterable[str]
) -> list[str]:
    wanted = None if names is None else set(names)
    left_out = set(exclude)
    lines = []
    for function in schema.functions.values():
        if function.name in left_out or (wanted is not None and function.name not in wanted):
            continue
        params = ", ".join(f"{p.name}: {p.type}" for p in function.params)
        lines.append(f"| `{function.name}({params})` | `{function.returns}` | {function.doc} |")
    return lines


def fragmentation_markdown(schema: Schema | None = None) -> str:
    """The fragmentation builtins' reference (docs/gpu-replay.md)."""
    schema = schema or default_schema()
    lines = [FRAGMENTATION_BEGIN, "", "| function | returns | meaning |", "|---|---|---|"]
    lines.extend(_function_rows(schema, FRAGMENTATION_FUNCTIONS, ()))
    lines.extend(["", FRAGMENTATION_END])
    return "\n".join(lines)


def _record_table(record: RecordType, prefix: str) -> list[str]:
    lines = [
        f"**{record.name}** — {record.doc}",
        "",
        "| attribute | type | meaning |",
        "|---|---|---|",
    ]
    for field in record.fields.values():
        lines.append(f"| `{prefix}{field.name}` | `{field.type}` | {field.doc} |")
    lines.append("")
    return lines


def markdown(schema: Schema | None = None) -> str:
    schema = schema or default_schema()
    lines = [BEGIN, ""]
    prefixes = {
        "Pod": "pod.",
        "Node": "node.",
        "NodeGpu": "node.gpu.",
        "Topology": "node.topology.",
        "GpuRequest": "pod.gpu_request.",
        "Gang": "gang.",
        "Domain": "domain.",
    }
    for record in (*RECORDS, *GANG_RECORDS):
        lines.extend(_record_table(record, prefixes.get(record.name, "")))
    lines.extend(["**Builtin functions**", "", "| function | returns | meaning |", "|---|---|---|"])
    lines.extend(_function_rows(schema, None, FRAGMENTATION_FUNCTIONS))
    lines.extend(["", END])
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    import sys

    print(fragmentation_markdown() if sys.argv[1:] == ["fragmentation"] else markdown())
