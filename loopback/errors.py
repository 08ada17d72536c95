"""Status bodies, written the way kube-apiserver v1.28 writes them.

Every failure the loopback server returns is a ``metav1.Status`` whose message, reason,
details and code are copied from the captures in ``k8s-wire/`` (08-*, 04-*, 03-*, 07-*).
They live in one module so each wording is written exactly once and the tests can compare
them verbatim.  Handlers raise :class:`APIError`; the HTTP layer turns it into a response.
"""

from __future__ import annotations

from typing import Any, ClassVar

JSON = dict[str, Any]


class APIError(Exception):
    """A request that ends in a Status failure (or a Success Status with a non-200 code)."""

    def __init__(self, code: int, body: JSON, headers: dict[str, str] | None = None) -> None:
        super().__init__(body.get("message", ""))
        self.code = code
        self.body = body
        self.headers = dict(headers or {})


def status(
    code: int,
    reason: str,
    message: str,
    details: JSON | None = None,
    *,
    metadata: JSON | None = None,
    with_details: bool = True,
) -> JSON:
    """A Failure Status in the field order the Go encoder uses."""
    body: JSON = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": metadata if metadata is not None else {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if with_details and details is not None:
        body["details"] = details
    body["code"] = code
    return body


def success(code: int | None = 200, details: JSON | None = None) -> JSON:
    """A Success Status; deletions carry details and no code, bindings a code and no details."""
    body: JSON = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details is not None:
        body["details"] = details
    if code is not None:
        body["code"] = code
    return body


def _details(name: str | None, group: str, kind: str) -> JSON:
    details: JSON = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = kind
    return details


def qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, name: str, group: str = "") -> APIError:
    msg = f'{qualified(resource, group)} "{name}" not found'
    return APIError(404, status(404, "NotFound", msg, _details(name, group, resource)))


def unknown_path() -> APIError:
    msg = "the server could not find the requested resource"
    return APIError(404, status(404, "NotFound", msg, {}))


def already_exists(resource: str, name: str, group: str = "") -> APIError:
    msg = f'{qualified(resource, group)} "{name}" already exists'
    return APIError(409, status(409, "AlreadyExists", msg, _details(name, group, resource)))


def conflict(resource: str, name: str, reason_text: str, group: str = "") -> APIError:
    msg = f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {reason_text}'
    return APIError(409, status(409, "Conflict", msg, _details(name, group, resource)))


MODIFIED_TEXT = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def stale(resource: str, name: str, group: str = "") -> APIError:
    return conflict(resource, name, MODIFIED_TEXT, group)


def uid_precondition(
    resource: str, name: str, key: str, want: str, have: str, group: str = ""
) -> APIError:
    """The StorageError text etcd3 storage produces for a failed UID precondition."""
    text = (
        f"StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, "
        f"AdditionalErrorMsg: Precondition failed: UID in precondition: {want}, "
        f"UID in object meta: {have}"
    )
    return conflict(resource, name, text, group)


def rv_precondition(
    resource: str, name: str, key: str, want: str, have: str, group: str = ""
) -> APIError:
    text = (
        f"StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, "
        f"AdditionalErrorMsg: Precondition failed: ResourceVersion in precondition: {want}, "
        f"ResourceVersion in object meta: {have}"
    )
    return conflict(resource, name, text, group)


def already_bound(pod: str, node: str) -> APIError:
    msg = (
        f'Operation cannot be fulfilled on pods/binding "{pod}": '
        f'pod {pod} is already assigned to node "{node}"'
    )
    return APIError(409, status(409, "Conflict", msg, {"name": pod, "kind": "pods/binding"}))


def bad_request(message: str) -> APIError:
    return APIError(400, status(400, "BadRequest", message, None, with_details=False))


def method_not_allowed() -> APIError:
    msg = "the server does not allow this method on the requested resource"
    return APIError(405, status(405, "MethodNotAllowed", msg, {}))


def unsupported_patch() -> APIError:
    return APIError(415, status(415, "UnsupportedMediaType", "415: Unsupported Media Type", {}))


def unsupported_media(accepted: list[str]) -> APIError:
    msg = (
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(accepted)
    )
    return APIError(415, status(415, "UnsupportedMediaType", msg, {}))


def unauthorized() -> APIError:
    return APIError(401, status(401, "Unauthorized", "Unauthorized", None, with_details=False))


def forbidden(
    user: str, verb: str, resource: str, subresource: str, group: str, namespace: str, name: str
) -> APIError:
    """RBAC's denial, word for word (08-forbidden-403*.json)."""
    full = f"{resource}/{subresource}" if subresource else resource
    where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    why = f'User "{user}" cannot {verb} resource "{full}" in API group "{group}" {where}'
    subject = qualified(resource, group)
    msg = f'{subject} "{name}" is forbidden: {why}' if name else f"{subject} is forbidden: {why}"
    err = APIError(403, status(403, "Forbidden", msg, _details(name, group, resource)))
    err.headers["X-Content-Type-Options"] = "nosniff"
    return err


class Cause:
    """One field error: ``field``, the Go ``ErrorType`` text, and the detail."""

    REASONS: ClassVar[dict[str, str]] = {
        "Invalid value": "FieldValueInvalid",
        "Required value": "FieldValueRequired",
        "Forbidden": "FieldValueForbidden",
        "Unsupported value": "FieldValueNotSupported",
        "Duplicate value": "FieldValueDuplicate",
        "Too long": "FieldValueTooLong",
    }

    def __init__(
        self,
        field: str,
        kind: str,
        detail: str = "",
        value: Any = None,
        show_value: bool = False,
        value_text: str | None = None,
    ) -> None:
        self.field = field
        self.kind = kind
        self.detail = detail
        self.value = value
        self.show_value = show_value or value_text is not None
        self.value_text = value_text

    def text(self) -> str:
        parts = self.kind
        if self.show_value:
            shown = self.value_text if self.value_text is not None else _go_value(self.value)
            parts += f": {shown}"
        if self.detail:
            parts += f": {self.detail}"
        return parts

    def as_json(self) -> JSON:
        return {
            "reason": self.REASONS.get(self.kind, "FieldValueInvalid"),
            "message": self.text(),
            "field": self.field,
        }


def _go_value(value: Any) -> str:
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    if value is None:
        return "null"
    return str(value)


def invalid(
    subject: str, name: str, causes: list[Cause], details_kind: str, group: str = ""
) -> APIError:
    """``<Kind> "<name>" is invalid: <field>: <text>`` with ``details.causes`` (08-invalid-422)."""
    if len(causes) == 1:
        summary = f"{causes[0].field}: {causes[0].text()}"
    else:
        summary = "[" + ", ".join(f"{c.field}: {c.text()}" for c in causes) + "]"
    msg = f'{subject} "{name}" is invalid: {summary}'
    details = _details(name, group, details_kind)
    details["causes"] = [c.as_json() for c in causes]
    return APIError(422, status(422, "Invalid", msg, details))


def invalid_options(kind: str, causes: list[Cause]) -> APIError:
    """ListOptions / PatchOptions validation (03-list-rv-exact-without-rv-422, 05-...-422)."""
    summary = "; ".join(f"{c.field}: {c.text()}" for c in causes)
    msg = f'{kind}.meta.k8s.io "" is invalid: {summary}'
    details = {"group": "meta.k8s.io", "kind": kind, "causes": [c.as_json() for c in causes]}
    return APIError(422, status(422, "Invalid", msg, details))


def expired(message: str, metadata: JSON | None = None) -> APIError:
    return APIError(
        410, status(410, "Expired", message, None, metadata=metadata, with_details=False)
    )


LIST_TOO_OLD = "The resourceVersion for the provided list is too old."
CONTINUE_TOO_OLD = (
    "The provided continue parameter is too old to display a consistent list result. You can start "
    "a new list without the continue parameter, or use the continue token in this response to "
    "retrieve the remainder of the results. Continuing with the provided token results in an "
    "inconsistent list - objects that were created, modified, or deleted between the time the first "
    "chunk was returned and now may show up in the list."
)


def watch_expired(asked: int, oldest: int) -> JSON:
    """The object of the single ERROR event a too-old watch gets (03-watch-too-old-rv-410)."""
    return status(
        410, "Expired", f"too old resource version: {asked} ({oldest})", None, with_details=False
    )


def too_large_rv(asked: int, current: int) -> APIError:
    msg = f"Timeout: Too large resource version: {asked}, current: {current}"
    details = {
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    }
    return APIError(504, status(504, "Timeout", msg, details), {"Retry-After": "1"})


def internal_error(message: str) -> APIError:
    details = {"causes": [{"message": message}]}
    return APIError(
        500, status(500, "InternalError", f"Internal error occurred: {message}", details)
    )


def too_many_requests(retry_after: int) -> APIError:
    body = status(
        429,
        "TooManyRequests",
        "Too many requests, please try again later.",
        {"retryAfterSeconds": retry_after},
    )
    return APIError(429, body, {"Retry-After": str(retry_after)})


def service_unavailable(
    message: str = "the server is currently unable to handle the request",
) -> APIError:
    return APIError(503, status(503, "ServiceUnavailable", message, {}))


_GENERIC_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def generic(code: int, message: str | None = None, retry_after: int | None = None) -> APIError:
    """An injected failure: the closest real Status for ``code``."""
    if code == 429:
        return too_many_requests(retry_after if retry_after is not None else 1)
    if code == 500:
        return internal_error(message or "injected failure")
    if code == 503 and message is None:
        err = service_unavailable()
    else:
        reason = _GENERIC_REASONS.get(code, "Unknown")
        err = APIError(code, status(code, reason, message or f"injected {code}", {}))
    if retry_after is not None:
        err.headers["Retry-After"] = str(retry_after)
        err.body.setdefault("details", {})["retryAfterSeconds"] = retry_after
    return err
