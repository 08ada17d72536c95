"""The record of the last good policy version: its encoding, and writing and reading it
against the loopback API server."""

from __future__ import annotations

import base64
import gzip
import json
import random
import string

import pytest
from kubernetes import client

from loopback import LoopbackAPIServer
from policyengine.controller.policy_record import (
    MAX_BYTES,
    SOURCES_KEY,
    PolicyRecord,
    decode,
    encode,
)
from policyengine.lang.compiler import Program
from policyengine.lang.loader import RecordedSources
from policyengine.schedlib import default_schema

NS, NAME = "kube-system", "policyengine-policy-record"


def _program(texts: dict[str, str]) -> Program:
    from policyengine.lang.compiler import compile_texts

    result = compile_texts(texts, default_schema())
    assert result.program is not None, result.diagnostics
    return result.program


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


ROUND_TRIPS = [
    RecordedSources({"p.sched": 'policy "p" { }\n'}, {}),
    RecordedSources(
        {"ns/cm/p.sched": 'import "kube-default.sched"\n'}, {"@shipped/kube-default.sched": "x"}
    ),
    RecordedSources({"ü.sched": "# ünïcødé\n"}, {"lib.sched": ""}),
]


@pytest.mark.parametrize("sources", ROUND_TRIPS, ids=["one file", "with a shipped import", "utf-8"])
def test_sources_round_trip(sources: RecordedSources) -> None:
    assert decode(encode(sources)) == sources


UNREADABLE = [
    ("not base64", "%%%", "is not gzipped JSON in base64"),
    ("not gzip", _b64(b"plain"), "is not gzipped JSON in base64"),
    ("not json", _b64(gzip.compress(b"{")), "is not gzipped JSON in base64"),
    ("not an object", _b64(gzip.compress(b"[]")), "is not a JSON object"),
    ("no entries", _b64(gzip.compress(b'{"entries": {}, "imported": {}}')), "has no entries"),
    (
        "a text not a string",
        _b64(gzip.compress(b'{"entries": {"a": 1}, "imported": {}}')),
        "has no entries",
    ),
]


@pytest.mark.parametrize(
    ("value", "says"), [u[1:] for u in UNREADABLE], ids=[u[0] for u in UNREADABLE]
)
def test_an_unreadable_record_is_a_value_error(value: str, says: str) -> None:
    with pytest.raises(ValueError, match=says) as raised:
        decode(value)
    assert str(raised.value).startswith(SOURCES_KEY)


def test_write_creates_then_replaces_and_skips_what_is_recorded(
    apiserver: LoopbackAPIServer,
) -> None:
    api = client.ApiClient(apiserver.client_configuration())
    record = PolicyRecord(api, NS, NAME)
    assert record.read() is None
    first = _program({"p.sched": 'policy "p" { filter f { true } }\n'})
    assert record.write(first, "directory /etc/policies")
    assert record.write(first, "directory /etc/policies")  # recorded already: no request
    assert len(apiserver.requests(resource="configmaps", method="POST")) == 1
    assert apiserver.requests(resource="configmaps", method="PUT") == []
    found = record.read()
    assert found is not None
    assert (found.version, found.digest, found.origin) == (
        first.version,
        first.digest,
        "directory /etc/policies",
    )
    assert found.where == f"configmap {NS}/{NAME}"
    again = found.compile(default_schema())
    assert again.program is not None and again.program.version == first.version

    second = _program({"p.sched": 'policy "p" { filter f { false } }\n'})
    assert record.write(second, "directory /etc/policies")
    assert len(apiserver.requests(resource="configmaps", method="PUT")) == 1
    stored = apiserver.get("configmaps", NS, NAME)
    assert stored is not None and stored["data"]["version"] == second.version
    assert stored["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "policyengine"
    api.close()


def test_a_policy_too_large_to_record_is_not_written(apiserver: LoopbackAPIServer) -> None:
    noise = "".join(random.Random(0).choices(string.ascii_letters, k=2 * MAX_BYTES))
    big = _program({"p.sched": f'policy "p" {{ filter f {{ node.name != "{noise}" }} }}\n'})
    api = client.ApiClient(apiserver.client_configuration())
    assert not PolicyRecord(api, NS, NAME).write(big, "directory /etc/policies")
    assert apiserver.get("configmaps", NS, NAME) is None
    api.close()


def test_a_record_that_cannot_be_read_is_none(apiserver: LoopbackAPIServer) -> None:
    apiserver.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": NAME, "namespace": NS},
            "binaryData": {SOURCES_KEY: _b64(b"not gzip")},
        }
    )
    api = client.ApiClient(apiserver.client_configuration())
    assert PolicyRecord(api, NS, NAME).read() is None
    apiserver.forbid(resource="configmaps")
    assert PolicyRecord(api, NS, NAME).read() is None
    api.close()


def test_the_encoding_is_plain_json_under_gzip() -> None:
    sources = ROUND_TRIPS[1]
    document = json.loads(gzip.decompress(base64.b64decode(encode(sources))))
    assert document == {"entries": dict(sources.entries), "imported": dict(sources.imported)}
