"""drift(doc) lists what an OpenAPI document has and the SDK does not: a
route neither in ROUTES nor in NOT_IN_SDK, a query parameter or header the
SDK does not send, a request field its method takes no argument for, a
response field its model lacks (nested objects too), a route of ROUTES the
document lost, and a version that is not the document's info.version."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from typing import Any

import sandman
from sandman import NOT_IN_SDK, ROUTES, SCHEMAS
from sandman.models import model_of

METHODS = ("get", "post", "put", "patch", "delete")
RESOURCES = {
    "sessions": sandman.client.Sessions,
    "checkpoints": sandman.client.Checkpoints,
    "client_tokens": sandman.client.ClientTokens,
    "usage": sandman.client.UsageResource,
    "pools": sandman.client.Pools,
    "webhook_endpoints": sandman.client.WebhookEndpoints,
    "webhook_deliveries": sandman.client.WebhookDeliveries,
}


def _resolve(doc: dict, node: dict) -> tuple[str | None, dict]:
    """A schema node's component name (when a $ref, or an allOf of one) and the schema."""
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[1]
        return name, doc["components"]["schemas"][name]
    if len(node.get("allOf", [])) == 1:
        return _resolve(doc, node["allOf"][0])
    for alt in node.get("oneOf", []) + node.get("anyOf", []):
        if alt.get("type") != "null":
            return _resolve(doc, alt)
    return None, node


def _json_fields(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.metadata.get("json", f.name): hints[f.name] for f in dataclasses.fields(cls)}


def _check_model(doc: dict, where: str, schema: dict, cls: type, problems: list[str], seen: set) -> None:
    if (where, cls) in seen:
        return
    seen.add((where, cls))
    fields = _json_fields(cls)
    for prop, sub in (schema.get("properties") or {}).items():
        if prop not in fields:
            problems.append(f"field {prop} of {where} is missing from {cls.__name__}")
            continue
        _check_nested(doc, f"{where}.{prop}", sub, fields[prop], problems, seen)


def _check_nested(doc: dict, where: str, node: dict, tp: Any, problems: list[str], seen: set) -> None:
    name, schema = _resolve(doc, node)
    if schema.get("type") == "array" or "items" in schema:
        name, schema = _resolve(doc, schema.get("items", {}))
    if not schema.get("properties"):
        return  # a scalar, an enum or a string map
    if name is not None and name not in SCHEMAS:
        problems.append(f"schema {name} ({where}) has no model in SCHEMAS")
        return
    cls = model_of(tp)
    if cls is None:
        problems.append(f"{where} is an object in the document but not a model in the SDK")
        return
    _check_model(doc, name or where, schema, cls, problems, seen)


def _method(sdk: str) -> Any:
    resource, name = sdk.split(".")
    return getattr(RESOURCES[resource], name)


def drift(doc: dict) -> list[str]:
    problems: list[str] = []
    seen_models: set = set()
    by_key = {f"{r.method} {r.path}": (op, r) for op, r in ROUTES.items()}
    seen = set()
    for path, item in doc.get("paths", {}).items():
        for m in METHODS:
            op = item.get(m)
            if op is None:
                continue
            key = f"{m.upper()} {path}"
            seen.add(key)
            if key not in by_key:
                if key not in NOT_IN_SDK:
                    problems.append(f"route {key} ({op.get('operationId')}) is in the document but not in the SDK's ROUTES")
                continue
            name, r = by_key[key]
            for p in item.get("parameters", []) + op.get("parameters", []):
                if "$ref" in p:
                    p = doc["components"]["parameters"][p["$ref"].rsplit("/", 1)[1]]
                if p["in"] == "query" and p["name"] not in r.query + r.page_query:
                    problems.append(f"query parameter {p['name']} of {key} is not sent by the SDK (ROUTES[{name!r}].query)")
                if p["in"] == "header" and p["name"].lower() not in {h.lower() for h in r.headers}:
                    problems.append(f"header {p['name']} of {key} is not sent by the SDK (ROUTES[{name!r}].headers)")
            if r.kind == "link":
                continue
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            if body:
                _, schema = _resolve(doc, body)
                for sdk in r.sdk:
                    fn = _method(sdk)
                    params = inspect.signature(fn).parameters
                    for prop, sub in (schema.get("properties") or {}).items():
                        if prop not in params:
                            problems.append(f"request field {prop} of {key} is not an argument of {sdk}")
                        else:
                            hint = typing.get_type_hints(fn).get(prop)
                            _check_nested(doc, f"{key} body.{prop}", sub, hint, problems, seen_models)
            for status, resp in op.get("responses", {}).items():
                if not status.startswith("2"):
                    continue
                schema = resp.get("content", {}).get("application/json", {}).get("schema")
                if not schema:
                    continue
                rname, rs = _resolve(doc, schema)
                if rs.get("properties") and rname not in SCHEMAS:
                    problems.append(f"the answer of {key} ({rname}) has no model in SCHEMAS")
                elif rname in SCHEMAS:
                    _check_model(doc, rname, rs, SCHEMAS[rname], problems, seen_models)
    for key in by_key:
        if key not in seen:
            problems.append(f"ROUTES has {key}, which the document does not")
    if doc["info"]["version"] != sandman.API_VERSION:
        problems.append(f"the document is version {doc['info']['version']}, sandman.API_VERSION {sandman.API_VERSION}")
    return problems
