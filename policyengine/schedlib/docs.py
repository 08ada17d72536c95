"""The README's attribute reference, generated from the declarations so the two never drift.

``python -m policyengine.schedlib.docs`` prints the Markdown; a test holds the README's
"Attribute reference" section equal to it.
"""

from __future__ import annotations

from policyengine.lang.schema import Schema
from policyengine.lang.types import RecordType
from policyengine.schedlib import default_schema
from policyengine.schedlib.gangs import GANG_RECORDS
from policyengine.schedlib.records import RECORDS

BEGIN = "<!-- attribute-reference:begin -->"
END = "<!-- attribute-reference:end -->"


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
    for function in schema.functions.values():
        params = ", ".join(f"{p.name}: {p.type}" for p in function.params)
        lines.append(f"| `{function.name}({params})` | `{function.returns}` | {function.doc} |")
    lines.extend(["", END])
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    print(markdown())
