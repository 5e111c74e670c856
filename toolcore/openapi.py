"""OpenAPI 3.0 / 3.1 documents in, tool definitions out: one tool per operation.

`openapi_tools(doc, file=...)` turns every get/put/post/delete/patch operation under `paths` into an
OpenAI-layout function definition (`name`, `description`, `parameters`) for `Tool.from_schema`:
- name: the `operationId` with characters outside `[A-Za-z0-9_.-]` made `_` (cut to 64), or without one
  the method and the path's words (`GET /pets/{petId}` -> `get_pets_petId`); two operations with one
  name fail, naming both.
- description: the `summary`, else the `description`, else the method and path.
- parameters: `in: path` (always required) and `in: query` parameters, the operation's overriding the
  path item's of the same name and place. Header and cookie parameters are left out: they carry auth
  and transport, not what a user asks for. A JSON request body (`application/json` or `+json`) that is
  an object has its properties beside the parameters (required only when the body is); any other body,
  or one whose property names a parameter already has, goes whole under `body`. An operation whose
  required body has no JSON form (a file upload) is left out: a tool call's arguments are JSON.
- schemas: local `$ref`s resolved, `readOnly` properties dropped (a client never sends them), 3.0's
  `nullable` and boolean `exclusiveMinimum`/`exclusiveMaximum` written as JSON Schema 2020-12, and
  keywords only OpenAPI reads (`example`, `xml`, `discriminator`, `externalDocs`, `x-*`) dropped.
Swagger 2.0, refs to other files and refs that point nowhere fail on one line naming the file.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any, Mapping

from .errors import ToolkitError
from .schema import SUBSCHEMA_KEYS, SUBSCHEMA_MAPS, resolve_local_ref

METHODS = ("get", "put", "post", "delete", "patch")   # head/options/trace: transport, not user requests
ARGUMENT_PLACES = ("path", "query")
OPENAPI_ONLY = {"example", "xml", "discriminator", "externalDocs", "nullable", "readOnly"}
_NOT_NAME = re.compile(r"[^A-Za-z0-9_.-]+")
_PATH_WORDS = re.compile(r"[^A-Za-z0-9]+")


def is_openapi(data: Any) -> bool:
    """A loaded document that is an OpenAPI (or Swagger) description rather than tool definitions."""
    return isinstance(data, Mapping) and ("openapi" in data or "swagger" in data)


def openapi_tools(doc: Mapping[str, Any], *, file: str) -> list[dict[str, Any]]:
    """One function definition per operation of `doc` (see the module docstring)."""
    if "swagger" in doc:
        raise ToolkitError(f"Swagger {doc['swagger']} is not read, only OpenAPI 3", file=file, field="swagger",
                           fix="convert it to OpenAPI 3 first, e.g. npx swagger2openapi in.yaml -o out.yaml")
    if not str(doc.get("openapi")).startswith("3."):
        raise ToolkitError(f"OpenAPI version {doc.get('openapi')!r} is not read, only 3.0 and 3.1", file=file,
                           field="openapi", fix="convert the document to OpenAPI 3.1")
    paths = doc.get("paths")
    if not isinstance(paths, Mapping):
        raise ToolkitError("an OpenAPI document needs a `paths` mapping", file=file, field="paths",
                           fix="describe the operations under paths")
    tools: dict[str, tuple[str, dict]] = {}
    for path, item in paths.items():
        item = _deref(doc, item, file=file, where=f"paths.{path}")
        if not isinstance(item, Mapping):
            raise ToolkitError("a path item must be a mapping", file=file, field=f"paths.{path}")
        for method in METHODS:
            if method not in item:
                continue
            op = f"{method.upper()} {path}"
            tool = _Operation(doc, file, op).tool(path, method, item)
            if tool is None:
                continue
            if tool["name"] in tools:
                raise ToolkitError(f"operations {tools[tool['name']][0]} and {op} are both named {tool['name']!r}",
                                   file=file, field=f"paths.{path}.{method}.operationId",
                                   fix="give each operation its own operationId")
            tools[tool["name"]] = (op, tool)
    if not tools:
        raise ToolkitError("no operation to make a tool of", file=file, field="paths",
                           fix="add get/put/post/delete/patch operations (with JSON bodies) under paths")
    return [_plain(tool) for _, tool in tools.values()]


def _deref(doc: Mapping[str, Any], node: Any, *, file: str, where: str, op: str = "") -> Any:
    """`node` with a `$ref` (and a chain of them) followed; fails naming the ref that cannot be."""
    seen: set[str] = set()
    at = f"{op}: " if op else ""
    while isinstance(node, Mapping) and "$ref" in node:
        ref = node["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise ToolkitError(f"{at}$ref {ref!r} refers to another file", file=file, field=where,
                               fix="bundle the document into one file first, e.g. npx @redocly/cli bundle")
        target = resolve_local_ref(doc, ref)
        if target is None or ref in seen:
            raise ToolkitError(f"{at}$ref {ref!r} points nowhere in this document", file=file, field=where,
                               fix="define it under components or correct the ref")
        seen.add(ref)
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}   # 3.1: siblings refine the target
    return node


class _Operation:
    """One operation's conversion; `defs` collects the component schemas its recursive refs need."""

    def __init__(self, doc: Mapping[str, Any], file: str, op: str):
        self.doc, self.file, self.op = doc, file, op
        self.defs: dict[str, Any] = {}
        self.def_names: dict[str, str] = {}      # ref -> its name under $defs
        self.expanding: list[str] = []
        self.recursive: set[str] = set()

    def fail(self, message: str, field: str, fix: str | None = None) -> ToolkitError:
        return ToolkitError(f"{self.op}: {message}", file=self.file, field=field, fix=fix)

    def tool(self, path: str, method: str, item: Mapping[str, Any]) -> dict[str, Any] | None:
        where = f"paths.{path}.{method}"
        op = self.deref(item[method], where)
        if not isinstance(op, Mapping):
            raise self.fail("an operation must be a mapping", where)
        props: dict[str, Any] = {}
        required: list[str] = []
        for param in self.parameters(item, op, where):
            name = param["name"]
            if name in props:
                raise self.fail(f"parameter {name!r} is both a path and a query parameter", f"{where}.parameters",
                                "rename one of them")
            props[name] = self.parameter_schema(param, f"{where}.parameters.{name}")
            if param["in"] == "path" or param.get("required"):
                required.append(name)
        body = self.deref(op.get("requestBody"), f"{where}.requestBody") or {}
        if not isinstance(body, Mapping):
            raise self.fail("requestBody must be a mapping", f"{where}.requestBody")
        schema = self.body_schema(body, f"{where}.requestBody")
        if schema is None and body.get("required"):
            return None
        if schema is not None:
            body_required = bool(body.get("required"))
            if _mergeable(schema) and not set(schema["properties"]) & set(props):
                props.update(schema["properties"])
                required += schema.get("required", []) if body_required else []
            else:
                if "body" in props:
                    raise self.fail("a parameter named 'body' leaves no name for the request body",
                                    f"{where}.parameters", "rename the parameter")
                if body.get("description"):
                    schema = {**schema, "description": body["description"]}
                props["body"] = schema
                required += ["body"] if body_required else []
        parameters: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            parameters["required"] = required
        if self.defs:
            parameters["$defs"] = self.defs
        description = op.get("summary") or op.get("description") or self.op
        return {"name": self.name(path, method, op), "description": str(description).strip(),
                "parameters": parameters}

    def name(self, path: str, method: str, op: Mapping[str, Any]) -> str:
        words = _NOT_NAME.sub("_", str(op.get("operationId") or "")).strip("_")[:64]
        return words or "_".join([method, *(w for w in _PATH_WORDS.split(path) if w)])[:64]

    def parameters(self, item: Mapping[str, Any], op: Mapping[str, Any], where: str) -> list[Mapping[str, Any]]:
        """Path and query parameters, the operation's replacing the path item's with the same name and place."""
        merged: dict[tuple[str, str], Mapping[str, Any]] = {}
        for owner, params in (("path item", item.get("parameters")), ("operation", op.get("parameters"))):
            if params is None:
                continue
            if not isinstance(params, list):
                raise self.fail(f"the {owner}'s parameters must be a list", f"{where}.parameters")
            for i, param in enumerate(params):
                param = self.deref(param, f"{where}.parameters[{i}]")
                if not isinstance(param, Mapping) or not isinstance(param.get("name"), str) \
                        or param.get("in") not in ARGUMENT_PLACES + ("header", "cookie"):
                    raise self.fail("a parameter needs a string `name` and `in` (path, query, header, cookie)",
                                    f"{where}.parameters[{i}]")
                merged[param["name"], param["in"]] = param
        return [p for p in merged.values() if p["in"] in ARGUMENT_PLACES]

    def parameter_schema(self, param: Mapping[str, Any], where: str) -> dict[str, Any]:
        raw = param.get("schema")
        if raw is None and isinstance(param.get("content"), Mapping):     # a parameter sent as JSON
            raw = next((m.get("schema") for m in param["content"].values() if isinstance(m, Mapping)), None)
        if raw is None:
            raise self.fail("a parameter needs a `schema`", where, "add e.g. `schema: {type: string}`")
        schema = self.schema(raw, f"{where}.schema")
        if param.get("description"):
            schema = {**schema, "description": param["description"]}
        return schema

    def body_schema(self, body: Mapping[str, Any], where: str) -> dict[str, Any] | None:
        """The converted schema of the body's JSON media type, or None when it has none."""
        content = body.get("content") or {}
        for media, entry in content.items():
            kind = str(media).split(";")[0].strip().lower()
            if kind == "application/json" or kind.endswith("+json"):
                raw = entry.get("schema") if isinstance(entry, Mapping) else None
                return self.schema(raw if raw is not None else {}, f"{where}.content.{media}.schema")
        return None

    def deref(self, node: Any, where: str) -> Any:
        return _deref(self.doc, node, file=self.file, where=where, op=self.op)

    def schema(self, node: Any, where: str) -> Any:
        """A JSON Schema 2020-12 copy of OpenAPI schema `node`, refs inlined."""
        if not isinstance(node, Mapping):
            return node
        if "$ref" in node:
            return self.ref(node, where)
        out: dict[str, Any] = {}
        read_only: set[str] = set()
        for key, value in node.items():
            if key in OPENAPI_ONLY or str(key).startswith("x-"):
                continue
            if key in SUBSCHEMA_MAPS and isinstance(value, Mapping):
                value = {k: self.schema(v, f"{where}.{key}.{k}") for k, v in value.items()}
                if key == "properties":
                    read_only = {k for k, v in value.items() if isinstance(v, Mapping) and v.get("readOnly") is True}
                    value = {k: v for k, v in value.items() if k not in read_only}
            elif key in SUBSCHEMA_KEYS:
                value = [self.schema(v, f"{where}.{key}[{i}]") for i, v in enumerate(value)] \
                    if isinstance(value, list) else self.schema(value, f"{where}.{key}")
            out[key] = value
        if node.get("readOnly") is True:
            out["readOnly"] = True        # read by the enclosing `properties`, which drops it
        if read_only and isinstance(out.get("required"), list):
            out["required"] = [r for r in out["required"] if r not in read_only]
        for bound in ("Minimum", "Maximum"):          # 3.0: a flag on minimum; 2020-12: the bound itself
            flag = out.get(f"exclusive{bound}")
            if isinstance(flag, bool):
                del out[f"exclusive{bound}"]
                if flag and bound.lower() in out:
                    out[f"exclusive{bound}"] = out.pop(bound.lower())
        if node.get("nullable") is True and isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]   # 3.0.3: nullable adds null to an explicit type only
        return out

    def ref(self, node: Mapping[str, Any], where: str) -> dict[str, Any]:
        # Inlined, so the schema the model reads shows each field where it goes and a tool carries only
        # what its operation uses; a ref met again inside its own expansion (a recursive schema) cannot
        # be, so there it refers to a copy under $defs, and the outermost use stays inline.
        ref = node["$ref"]
        siblings = self.schema({k: v for k, v in node.items() if k != "$ref"}, where)
        if ref in self.expanding:
            self.recursive.add(ref)
            return {"$ref": f"#/$defs/{self.def_name(ref)}", **siblings}
        target = self.deref({"$ref": ref}, where)
        self.expanding.append(ref)
        out = self.schema(target, where)
        self.expanding.pop()
        if ref in self.recursive:
            self.defs[self.def_name(ref)] = out
        return {**out, **siblings}

    def def_name(self, ref: str) -> str:
        if ref not in self.def_names:
            base = name = _NOT_NAME.sub("_", ref.rsplit("/", 1)[-1]) or "schema"
            n = 1
            while name in self.def_names.values():      # two refs ending alike (schemas/Node, parameters/Node)
                n += 1
                name = f"{base}_{n}"
            self.def_names[ref] = name
        return self.def_names[ref]


def _mergeable(schema: Any) -> bool:
    """An object body whose properties can stand beside the parameters without losing a constraint."""
    return isinstance(schema, Mapping) and schema.get("type", "object") == "object" \
        and isinstance(schema.get("properties"), Mapping) and bool(schema["properties"]) \
        and set(schema) <= {"type", "properties", "required", "description", "title", "additionalProperties"} \
        and schema.get("additionalProperties", False) in (True, False)


def _plain(value: Any) -> Any:
    """JSON values only: YAML reads an unquoted `2026-03-14` (a default, an enum member) as a date."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value.isoformat() if isinstance(value, date) else value
