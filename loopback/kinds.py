"""Per-kind server behaviour: defaulting, admission, validation, views and timestamps.

The captures show what the apiserver adds to what a client sends (00-create-pod: defaulted
container fields, the two 300 s NoExecute tolerations, ``priority: 0``, ``qosClass``;
00-create-node: ``daemonEndpoints`` and ``nodeInfo``), how one stored Event looks through
``/api/v1`` and through ``events.k8s.io/v1`` (06-get-events-v1-as-core), and how times are
written (whole seconds, MicroTime with six digits).  A scheduler under test reads all of
these, so the loopback server produces them the same way.
"""

from __future__ import annotations

import copy
import re
from datetime import UTC, datetime
from typing import Any

from .errors import APIError, Cause, bad_request, invalid

JSON = dict[str, Any]

MICRO_TIME_KEYS = frozenset({"acquireTime", "renewTime", "eventTime", "lastObservedTime"})
TIME_KEYS = frozenset(
    {
        "creationTimestamp",
        "deletionTimestamp",
        "lastTransitionTime",
        "lastProbeTime",
        "lastHeartbeatTime",
        "firstTimestamp",
        "lastTimestamp",
        "deprecatedFirstTimestamp",
        "deprecatedLastTimestamp",
        "startTime",
        "startedAt",
        "finishedAt",
        "time",
    }
)


def utcnow() -> datetime:
    return datetime.now(UTC)


# (a UTC time's whole second, its text) last formatted: every write formats "now"
_last_time: tuple[datetime | None, str] = (None, "")


def fmt_time(when: datetime) -> str:
    global _last_time
    if when.tzinfo is not UTC:
        return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    second = when.replace(microsecond=0)
    last = _last_time
    if last[0] != second:
        last = (second, second.strftime("%Y-%m-%dT%H:%M:%SZ"))
        _last_time = last
    return last[1]


def fmt_micro(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> datetime:
    value = text.strip()
    if value.endswith("Z") or value.endswith("z"):
        value = value[:-1] + "+00:00"
    value = value.replace(" ", "T", 1) if "T" not in value else value
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


_TIME_FIELDS = TIME_KEYS | MICRO_TIME_KEYS
# (MicroTime?, text as sent) -> text as stored: a cluster's objects repeat a few timestamps
_normal_times: dict[tuple[bool, str], str] = {}
_NORMAL_TIMES_KEPT = 4096


def _normal_time(key: str, value: str) -> str:
    micro = key in MICRO_TIME_KEYS
    known = _normal_times.get((micro, value))
    if known is not None:
        return known
    try:
        parsed = parse_time(value)
    except ValueError:
        raise bad_request(
            f'parsing time "{value}" as "2006-01-02T15:04:05Z07:00": cannot parse'
        ) from None
    text = fmt_micro(parsed) if micro else fmt_time(parsed)
    if len(_normal_times) >= _NORMAL_TIMES_KEPT:
        _normal_times.clear()
    _normal_times[(micro, value)] = text
    return text


def normalize_times(value: Any, key: str = "") -> Any:
    """Re-encode Time and MicroTime fields the way the Go types marshal them; a new value
    (every map and list rebuilt), the given one untouched.  Leaves that are not times are
    copied without a call per leaf, and each distinct time text is parsed once."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(v, dict | list):
                out[k] = normalize_times(v, k)
            elif k in _TIME_FIELDS and isinstance(v, str) and v:
                out[k] = _normal_time(k, v)
            else:
                out[k] = v
        return out
    if isinstance(value, list):
        return [normalize_times(v, key) for v in value]
    if isinstance(value, str) and key in _TIME_FIELDS and value:
        return _normal_time(key, value)
    return value


# ------------------------------------------------------------------------- metadata order

_META_ORDER = (
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
)


def ordered_metadata(meta: JSON) -> JSON:
    out = {k: meta[k] for k in _META_ORDER if k in meta}
    for k, v in meta.items():
        if k not in out:
            out[k] = v
    for k in ("labels", "annotations"):
        if isinstance(out.get(k), dict):
            out[k] = {key: out[k][key] for key in sorted(out[k])}
    return out


# ------------------------------------------------------------------------- validation

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


def name_causes(kind: str, name: str) -> list[Cause]:
    if kind == "Namespace":
        if len(name) > 63:
            return [
                Cause(
                    "metadata.name",
                    "Invalid value",
                    "must be no more than 63 characters",
                    name,
                    True,
                )
            ]
        if not _LABEL.match(name):
            return [Cause("metadata.name", "Invalid value", LABEL_MSG, name, True)]
        return []
    if len(name) > 253:
        return [
            Cause(
                "metadata.name", "Invalid value", "must be no more than 253 characters", name, True
            )
        ]
    if not _SUBDOMAIN.match(name):
        return [Cause("metadata.name", "Invalid value", SUBDOMAIN_MSG, name, True)]
    return []


def validate(kind: str, api_version: str, obj: JSON) -> list[Cause]:
    """Field errors of a new object (name checks plus what the captures exercise)."""
    name = obj["metadata"].get("name", "")
    causes = name_causes(kind, name)
    if kind == "Pod":
        containers = (obj.get("spec") or {}).get("containers") or []
        if not containers:
            causes.append(Cause("spec.containers", "Required value"))
        for i, c in enumerate(containers):
            if not c.get("name"):
                causes.append(Cause(f"spec.containers[{i}].name", "Required value"))
            if not c.get("image"):
                causes.append(Cause(f"spec.containers[{i}].image", "Required value"))
    if kind == "Event" and api_version == "events.k8s.io/v1" and not obj.get("eventTime"):
        causes.append(Cause("eventTime", "Required value"))
    return causes


def raise_invalid(kind: str, name: str, causes: list[Cause]) -> None:
    if causes:
        raise invalid(kind, name, causes, kind)


# ------------------------------------------------------------------------- pods

_TOLERATION_KEYS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
BUILTIN_PRIORITY = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}


def _default_container(c: JSON) -> JSON:
    out = dict(c)
    out.setdefault("resources", {})
    res = out["resources"]
    limits = res.get("limits") or {}
    if limits:
        requests = dict(res.get("requests") or {})
        for k, v in limits.items():
            requests.setdefault(k, v)
        res["requests"] = requests
    for port in out.get("ports") or []:
        port.setdefault("protocol", "TCP")
    out.setdefault("terminationMessagePath", "/dev/termination-log")
    out.setdefault("terminationMessagePolicy", "File")
    if "imagePullPolicy" not in out:
        image = str(out.get("image", ""))
        tag = image.rsplit("/", 1)[-1]
        latest = "@" not in tag and (":" not in tag or tag.endswith(":latest"))
        out["imagePullPolicy"] = "Always" if latest else "IfNotPresent"
    return out


def default_pod(obj: JSON) -> JSON:
    """SetDefaults_Pod and friends: what decoding adds before managedFields are computed."""
    spec = obj.setdefault("spec", {})
    spec["containers"] = [_default_container(c) for c in spec.get("containers") or []]
    if spec.get("initContainers"):
        spec["initContainers"] = [_default_container(c) for c in spec["initContainers"]]
    ordered: JSON = {}
    for key in ("volumes", "initContainers", "containers", "ephemeralContainers"):
        if key in spec:
            ordered[key] = spec[key]
    ordered["restartPolicy"] = spec.get("restartPolicy", "Always")
    ordered["terminationGracePeriodSeconds"] = spec.get("terminationGracePeriodSeconds", 30)
    for key in ("activeDeadlineSeconds",):
        if key in spec:
            ordered[key] = spec[key]
    ordered["dnsPolicy"] = spec.get("dnsPolicy", "ClusterFirst")
    for key in (
        "nodeSelector",
        "serviceAccountName",
        "serviceAccount",
        "automountServiceAccountToken",
        "nodeName",
        "hostNetwork",
        "hostPID",
        "hostIPC",
        "shareProcessNamespace",
    ):
        if key in spec:
            ordered[key] = spec[key]
    ordered["securityContext"] = spec.get("securityContext", {})
    for key in ("imagePullSecrets", "hostname", "subdomain", "affinity"):
        if key in spec:
            ordered[key] = spec[key]
    ordered["schedulerName"] = spec.get("schedulerName", "default-scheduler")
    for key, value in spec.items():
        if key not in ordered and key not in (
            "enableServiceLinks",
            "preemptionPolicy",
            "priority",
            "priorityClassName",
            "tolerations",
        ):
            ordered[key] = value
    for key in ("tolerations", "priorityClassName", "priority"):
        if key in spec:
            ordered[key] = spec[key]
    ordered["enableServiceLinks"] = spec.get("enableServiceLinks", True)
    if "preemptionPolicy" in spec:
        ordered["preemptionPolicy"] = spec["preemptionPolicy"]
    obj["spec"] = ordered
    return obj


def admit_pod(obj: JSON, priority_classes: dict[str, JSON]) -> JSON:
    """DefaultTolerationSeconds and Priority admission (run after managedFields)."""
    spec = obj["spec"]
    tolerations = list(spec.get("tolerations") or [])
    for key in _TOLERATION_KEYS:
        covered = any(
            (t.get("key") == key or (not t.get("key") and t.get("operator") == "Exists"))
            and t.get("effect") in ("NoExecute", None, "")
            for t in tolerations
        )
        if not covered:
            tolerations.append(
                {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            )
    class_name = spec.get("priorityClassName")
    value, policy = 0, "PreemptLowerPriority"
    if class_name:
        if class_name in BUILTIN_PRIORITY:
            value = BUILTIN_PRIORITY[class_name]
        elif class_name in priority_classes:
            pc = priority_classes[class_name]
            value = int(pc.get("value", 0))
            policy = pc.get("preemptionPolicy", policy)
        else:
            from .errors import status

            msg = f'pods "{obj["metadata"].get("name", "")}" is forbidden: no PriorityClass with name {class_name} was found'
            raise APIError(
                403,
                status(
                    403, "Forbidden", msg, {"name": obj["metadata"].get("name", ""), "kind": "pods"}
                ),
            )
    else:
        for pc in priority_classes.values():
            if pc.get("globalDefault"):
                value = int(pc.get("value", 0))
                policy = pc.get("preemptionPolicy", policy)
                spec["priorityClassName"] = pc["metadata"]["name"]
    rebuilt: JSON = {}
    for key, v in spec.items():
        if key in (
            "enableServiceLinks",
            "preemptionPolicy",
            "priority",
            "priorityClassName",
            "tolerations",
        ):
            continue
        rebuilt[key] = v
    rebuilt["tolerations"] = tolerations
    if spec.get("priorityClassName"):
        rebuilt["priorityClassName"] = spec["priorityClassName"]
    rebuilt["priority"] = spec.get("priority", value)
    rebuilt["enableServiceLinks"] = spec.get("enableServiceLinks", True)
    rebuilt["preemptionPolicy"] = spec.get("preemptionPolicy", policy)
    for key, v in spec.items():
        if key not in rebuilt:
            rebuilt[key] = v
    obj["spec"] = rebuilt
    return obj


def qos_class(pod: JSON) -> str:
    spec = pod.get("spec") or {}
    containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
    any_set = False
    guaranteed = True
    for c in containers:
        res = c.get("resources") or {}
        req = {k: v for k, v in (res.get("requests") or {}).items() if k in ("cpu", "memory")}
        lim = {k: v for k, v in (res.get("limits") or {}).items() if k in ("cpu", "memory")}
        if req or lim:
            any_set = True
        if set(lim) != {"cpu", "memory"}:
            guaranteed = False
        for k, v in req.items():
            if lim.get(k) != v:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def pod_create_status(pod: JSON) -> JSON:
    return {"phase": "Pending", "qosClass": qos_class(pod)}


def pod_condition(cond: JSON) -> JSON:
    """A PodCondition as Go marshals it: the two Time fields are always there (null when zero)."""
    out: JSON = {"type": cond.get("type"), "status": cond.get("status")}
    out["lastProbeTime"] = cond.get("lastProbeTime")
    out["lastTransitionTime"] = cond.get("lastTransitionTime")
    for key in ("reason", "message"):
        if cond.get(key):
            out[key] = cond[key]
    for key, value in cond.items():
        if key not in out:
            out[key] = value
    return out


def order_pod_status(status: JSON) -> JSON:
    if isinstance(status.get("conditions"), list):
        status = {
            **status,
            "conditions": [pod_condition(c) for c in status["conditions"] if isinstance(c, dict)],
        }
    order = (
        "phase",
        "conditions",
        "message",
        "reason",
        "nominatedNodeName",
        "hostIP",
        "hostIPs",
        "podIP",
        "podIPs",
        "startTime",
        "initContainerStatuses",
        "containerStatuses",
        "qosClass",
    )
    out = {k: status[k] for k in order if k in status}
    for k, v in status.items():
        if k not in out:
            out[k] = v
    return out


# ------------------------------------------------------------------------- nodes

_NODE_INFO_KEYS = (
    "machineID",
    "systemUUID",
    "bootID",
    "kernelVersion",
    "osImage",
    "containerRuntimeVersion",
    "kubeletVersion",
    "kubeProxyVersion",
    "operatingSystem",
    "architecture",
)


def default_node_status(status: JSON | None) -> JSON:
    st = dict(status or {})
    conds = []
    for c in st.get("conditions") or []:
        cond: JSON = {"type": c.get("type"), "status": c.get("status")}
        cond["lastHeartbeatTime"] = c.get("lastHeartbeatTime")
        cond["lastTransitionTime"] = c.get("lastTransitionTime")
        for k, v in c.items():
            if k not in cond:
                cond[k] = v
        conds.append(cond)
    out: JSON = {}
    for key in ("capacity", "allocatable", "phase"):
        if key in st:
            out[key] = (
                {k: st[key][k] for k in sorted(st[key])} if isinstance(st[key], dict) else st[key]
            )
    if conds:
        out["conditions"] = conds
    if "addresses" in st:
        out["addresses"] = st["addresses"]
    out["daemonEndpoints"] = st.get("daemonEndpoints", {"kubeletEndpoint": {"Port": 0}})
    info = dict(st.get("nodeInfo") or {})
    out["nodeInfo"] = {k: info.get(k, "") for k in _NODE_INFO_KEYS} | info
    for k, v in st.items():
        if k not in out:
            out[k] = v
    return out


# ------------------------------------------------------------------------- events

CORE_EVENT_ORDER = (
    "involvedObject",
    "reason",
    "message",
    "source",
    "firstTimestamp",
    "lastTimestamp",
    "count",
    "type",
    "eventTime",
    "series",
    "action",
    "related",
    "reportingComponent",
    "reportingInstance",
)


def core_event_shape(ev: JSON) -> JSON:
    """The core/v1 Event as Go marshals it: zero structs present, empty strings kept."""
    out: JSON = {"kind": "Event", "apiVersion": "v1", "metadata": ev.get("metadata", {})}
    out["involvedObject"] = ev.get("involvedObject") or {}
    for key in ("reason", "message"):
        if ev.get(key):
            out[key] = ev[key]
    out["source"] = ev.get("source") or {}
    out["firstTimestamp"] = ev.get("firstTimestamp")
    out["lastTimestamp"] = ev.get("lastTimestamp")
    if ev.get("count"):
        out["count"] = ev["count"]
    if ev.get("type"):
        out["type"] = ev["type"]
    out["eventTime"] = ev.get("eventTime")
    for key in ("series", "action", "related"):
        if ev.get(key):
            out[key] = ev[key]
    out["reportingComponent"] = ev.get("reportingComponent") or ""
    out["reportingInstance"] = ev.get("reportingInstance") or ""
    return out


def event_v1_to_core(ev: JSON) -> JSON:
    core: JSON = {"metadata": ev.get("metadata", {})}
    core["involvedObject"] = ev.get("regarding") or {}
    core["reason"] = ev.get("reason")
    core["message"] = ev.get("note")
    core["source"] = ev.get("deprecatedSource") or {}
    core["firstTimestamp"] = ev.get("deprecatedFirstTimestamp")
    core["lastTimestamp"] = ev.get("deprecatedLastTimestamp")
    core["count"] = ev.get("deprecatedCount")
    core["type"] = ev.get("type")
    core["eventTime"] = ev.get("eventTime")
    series = ev.get("series")
    if series:
        core["series"] = {
            "count": series.get("count"),
            "lastObservedTime": series.get("lastObservedTime"),
        }
    core["action"] = ev.get("action")
    core["related"] = ev.get("related")
    core["reportingComponent"] = ev.get("reportingController")
    core["reportingInstance"] = ev.get("reportingInstance")
    return core_event_shape(core)


def event_core_to_v1(ev: JSON) -> JSON:
    out: JSON = {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "metadata": ev.get("metadata", {}),
    }
    out["eventTime"] = ev.get("eventTime")
    if ev.get("series"):
        out["series"] = ev["series"]
    for src, dst in (
        ("reportingComponent", "reportingController"),
        ("reportingInstance", "reportingInstance"),
        ("action", "action"),
        ("reason", "reason"),
    ):
        if ev.get(src):
            out[dst] = ev[src]
    out["regarding"] = ev.get("involvedObject") or {}
    if ev.get("related"):
        out["related"] = ev["related"]
    if ev.get("message"):
        out["note"] = ev["message"]
    if ev.get("type"):
        out["type"] = ev["type"]
    out["deprecatedSource"] = ev.get("source") or {}
    out["deprecatedFirstTimestamp"] = ev.get("firstTimestamp")
    out["deprecatedLastTimestamp"] = ev.get("lastTimestamp")
    if ev.get("count"):
        out["deprecatedCount"] = ev["count"]
    return out


def copy_json(value: Any) -> Any:
    return copy.deepcopy(value)
