"""Kubernetes manifests as input: the engine servers their containers start.

`read_manifest(text)` reads a multi-document YAML (a rendered Helm chart, `kubectl get -o
yaml` output, a `List`) and returns one `Workload` per container whose `command` + `args`
start an engine's server (`arbiter.sources.command`: `vllm serve`, `python -m
sglang.launch_server`, `trtllm-serve`, `mlc_llm serve`, also inside `sh -c "..."`).

Where the pod templates are, by kind:

- Pod: `spec`; Deployment, StatefulSet, ReplicaSet, DaemonSet, Job: `spec.template.spec`;
  CronJob: `spec.jobTemplate.spec.template.spec`;
- LeaderWorkerSet (`leaderworkerset.x-k8s.io`): `spec.leaderWorkerTemplate.leaderTemplate`
  and `.workerTemplate` (each a pod template), `size` pods per group: the leader's
  engine spans the leader's GPUs plus `size - 1` workers' (`total_gpus`);
- KServe InferenceService (`serving.kserve.io`): `spec.predictor` (its `containers`, or
  its `model` / framework entry, a container spec), `spec.predictor.workerSpec`;
  ServingRuntime and ClusterServingRuntime: `spec.containers`.

For each workload: the dialect, the serve arguments, the model (positional or flag),
`resources.limits["nvidia.com/gpu"]` and `requests`, the environment variables the engine
reads (`arbiter.sources.envvars`), the document's kind, name and namespace, the container,
and the 1-based line of its `args` (else `command`) in the file for SARIF. What is not an
engine server is listed in `Manifest.skipped` with the reason, never silently dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from constraints.edge import EdgeError, check_value

from ..dialects import DIALECTS
from ..errors import ManifestError
from .command import ServeCommand, find_serve_command, model_of
from .envvars import engine_variables, visible_gpus
from .expand import expand, known_values
from .lines import compose_documents, line_of, node_lines

GPU = "nvidia.com/gpu"
POD_SPEC = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}
RUNTIMES = ("ServingRuntime", "ClusterServingRuntime")
_API_KIND = re.compile(r"^apiVersion:\s*\S", re.M)
_KIND = re.compile(r"^kind:\s*\S", re.M)


@dataclass(frozen=True)
class Workload:
    """One container that starts an engine server, and what the manifest says about it."""

    dialect: str
    args: tuple[str, ...]  # the serve arguments after the launcher
    serve_args: str  # the line in the form `--serve-args` reads
    model: str | None
    kind: str
    name: str
    container: str
    gpus: int | None = None  # resources.limits["nvidia.com/gpu"]
    gpu_requests: int | None = None  # resources.requests["nvidia.com/gpu"]
    pods: int = 1  # pods the engine spans (a LeaderWorkerSet group's size)
    replicas: int | None = None  # the object's spec.replicas (copies, or nodes for --nnodes)
    worker_gpus: int | None = None  # a LeaderWorkerSet worker's GPU limit
    env: Mapping[str, str] = field(default_factory=dict)  # engine variable -> what it changes
    namespace: str | None = None
    role: str | None = None  # "leader", "worker", "predictor", "runtime"
    document: int = 0  # 0-based index of the YAML document
    line: int | None = None  # 1-based line of the container's args (else command)
    path: str = ""  # the container's path inside its document
    notes: tuple[str, ...] = ()
    unresolved: tuple[str, ...] = ()  # variable references the manifest gives no value for
    # the line of each option written as its own command/args item (`max-num-seqs`, and
    # `max_num_seqs`), so that an error about a flag points at it
    flag_lines: Mapping[str, int] = field(default_factory=dict)

    @property
    def total_gpus(self) -> int | None:
        """The GPUs the engine runs on: the pod's, plus the workers' of its group."""
        if self.gpus is None:
            return None
        if self.pods > 1:
            return self.gpus + (self.pods - 1) * (
                self.worker_gpus if self.worker_gpus is not None else self.gpus
            )
        return self.gpus

    @property
    def check_gpus(self) -> int | None:
        """The GPU count to check the workload with: SGLang counts GPUs per node (its
        `--nnodes` names the nodes, `arbiter.engines.sglang`), the others all the GPUs
        the engine spans (a LeaderWorkerSet group's)."""
        entry = DIALECTS.entries.get(self.dialect)
        return self.gpus if entry is not None and entry.gpus_per_node else self.total_gpus

    @property
    def where(self) -> str:
        return f"{self.kind}/{self.name} container {self.container!r}"


@dataclass(frozen=True)
class Manifest:
    """Every workload of a manifest, and each container or document not checked, with why."""

    workloads: tuple[Workload, ...]
    skipped: tuple[str, ...] = ()


def looks_like_manifest(text: str) -> bool:
    """True when a text has a top-level `apiVersion:` and `kind:` (some document of it)."""
    return bool(_API_KIND.search(text) and _KIND.search(text))


def read_manifest(text: str, source: str = "<manifest>") -> list[Workload]:
    """The engine workloads of a manifest text (see `scan_manifest` for what is skipped)."""
    return list(scan_manifest(text, source).workloads)


def scan_manifest(text: str, source: str = "<manifest>") -> Manifest:
    """Every engine workload of a manifest text, and what was skipped with the reason."""
    try:
        nodes = compose_documents(text)
    except yaml.YAMLError as exc:
        raise ManifestError(f"not valid YAML: {exc}", file=source) from None
    except EdgeError as exc:
        raise ManifestError(exc.reason, file=source) from None
    workloads: list[Workload] = []
    skipped: list[str] = []
    for index, node in enumerate(nodes):
        try:
            data = check_value(yaml.SafeLoader(text).construct_document(node), f"document {index}")
        except EdgeError as exc:
            raise ManifestError(exc.reason, key=exc.where or None, file=source) from None
        except yaml.YAMLError as exc:
            raise ManifestError(f"document {index}: {exc}", file=source) from None
        lines = node_lines(node)
        for doc, prefix, doc_lines in _objects(data, lines):
            found, why = _workloads(doc, prefix, index, doc_lines, source)
            workloads += found
            skipped += why
    return Manifest(tuple(workloads), tuple(skipped))


def _objects(
    data: Any, lines: dict[str, int], prefix: str = ""
) -> Iterator[tuple[Mapping[str, Any], str, dict[str, int]]]:
    """The Kubernetes objects of one document (a `List` holds them under `items`)."""
    if not isinstance(data, Mapping):
        return
    if data.get("kind") == "List" or (data.get("kind", "").endswith("List") and "items" in data):
        for i, item in enumerate(data.get("items") or ()):
            yield from _objects(item, lines, f"{prefix}items[{i}].")
        return
    yield data, prefix, lines


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def _pod_specs(doc: Mapping[str, Any]) -> list[tuple[str, str | None, Any]]:
    """(path, role, pod spec or container holder) of every pod template in an object."""
    kind = doc.get("kind")
    if kind in POD_SPEC:
        keys = POD_SPEC[kind]
        return [(".".join(keys), None, _get(doc, *keys))]
    if kind == "LeaderWorkerSet":
        base = ("spec", "leaderWorkerTemplate")
        out: list[tuple[str, str | None, Any]] = []
        for role, key in (("leader", "leaderTemplate"), ("worker", "workerTemplate")):
            spec = _get(doc, *base, key, "spec")
            if spec is not None:
                out.append((".".join((*base, key, "spec")), role, spec))
        return out
    if kind in RUNTIMES:
        return [("spec", "runtime", doc.get("spec"))]
    if kind == "InferenceService":
        predictor = _get(doc, "spec", "predictor")
        found: list[tuple[str, str | None, Any]] = [("spec.predictor", "predictor", predictor)]
        worker = _get(predictor, "workerSpec")
        if worker is not None:
            found.append(("spec.predictor.workerSpec", "worker", worker))
        return found
    return []


def _containers(path: str, holder: Any) -> list[tuple[str, Mapping[str, Any]]]:
    """(path, container) of a pod spec's containers; for a KServe predictor also its
    `model` or framework entry (a container spec with `args`/`command`/`resources`)."""
    if not isinstance(holder, Mapping):
        return []
    out = [
        (f"{path}.containers[{i}]", c)
        for i, c in enumerate(holder.get("containers") or ())
        if isinstance(c, Mapping)
    ]
    if path.startswith("spec.predictor"):
        for key, value in holder.items():
            if key in ("containers", "workerSpec") or not isinstance(value, Mapping):
                continue
            if {"args", "command", "resources"} & set(value):
                out.append((f"{path}.{key}", value))
    return out


def _workloads(
    doc: Mapping[str, Any], prefix: str, index: int, lines: dict[str, int], source: str
) -> tuple[list[Workload], list[str]]:
    kind = str(doc.get("kind") or "")
    found_meta = doc.get("metadata")
    meta: Mapping[str, Any] = found_meta if isinstance(found_meta, Mapping) else {}
    name = str(meta.get("name") or "<unnamed>")
    specs = _pod_specs(doc)
    if not specs:
        return [], [f"document {index}: {kind or 'an object'}/{name} runs no pod template"]
    found: list[Workload] = []
    skipped: list[str] = []
    raw = _get(doc, "spec", "replicas")
    replicas = raw if isinstance(raw, int) and not isinstance(raw, bool) else None
    worker_gpus = None
    size = 1
    if kind == "LeaderWorkerSet":
        size = _int(_get(doc, "spec", "leaderWorkerTemplate", "size"), "size", index, source) or 1
        worker = next((s for p, r, s in specs if r == "worker"), None)
        worker_gpus = max(
            (_gpus(c, "limits", index, source) or 0 for _, c in _containers("", worker)),
            default=None,
        )
    for path, role, holder in specs:
        for cpath, container in _containers(path, holder):
            words = [
                str(w) for w in (*(container.get("command") or ()), *(container.get("args") or ()))
            ]
            command = find_serve_command(words)
            cname = str(container.get("name") or cpath)
            if command is None:
                why = "starts no engine server"
                if kind == "LeaderWorkerSet" and role == "worker":
                    why = "is a worker of the leader's engine (its GPUs count in the leader's)"
                skipped.append(f"document {index}: {kind}/{name} container {cname!r} {why}")
                continue
            at = prefix + cpath
            line = line_of(lines, f"{at}.args") if "args" in container else None
            line = line or line_of(lines, f"{at}.command") or line_of(lines, at)
            flags = _flag_lines(container, at, lines)
            found.append(
                _workload(
                    command,
                    container,
                    kind,
                    name,
                    cname,
                    meta,
                    role,
                    index,
                    line,
                    at,
                    pods=size if role == "leader" else 1,
                    worker_gpus=worker_gpus if role == "leader" else None,
                    replicas=replicas,
                    source=source,
                    flag_lines=flags,
                )
            )
    return found, skipped


def _workload(
    command: ServeCommand,
    container: Mapping[str, Any],
    kind: str,
    name: str,
    cname: str,
    meta: Mapping[str, Any],
    role: str | None,
    index: int,
    line: int | None,
    path: str,
    *,
    pods: int,
    worker_gpus: int | None,
    replicas: int | None,
    source: str,
    flag_lines: Mapping[str, int],
) -> Workload:
    env = _env(container)
    values = known_values(env, _field_refs(container), pods if kind == "LeaderWorkerSet" else None)
    args, unresolved = expand(command.args, values)
    command = ServeCommand(command.dialect, command.program, args, model_of(command.dialect, args))
    notes = []
    if unresolved:
        shown = ", ".join(f"${n}" for n in unresolved)
        notes.append(f"{shown}: no value in the manifest; left as written")
    visible = visible_gpus(env)
    limit = _gpus(container, "limits", index, source)
    if visible is not None and limit is not None and visible != limit:
        notes.append(f"CUDA_VISIBLE_DEVICES lists {visible} GPU(s) of the {limit} the pod gets")
    if limit is None:
        notes.append(f"no resources.limits[{GPU!r}]: the GPU count is not in the manifest")
    return Workload(
        dialect=command.dialect,
        args=command.args,
        serve_args=command.serve_args,
        model=command.model,
        kind=kind,
        name=name,
        container=cname,
        gpus=limit,
        gpu_requests=_gpus(container, "requests", index, source),
        pods=pods,
        replicas=replicas,
        worker_gpus=worker_gpus,
        env=engine_variables(env, command.dialect),
        namespace=str(meta["namespace"]) if meta.get("namespace") else None,
        role=role,
        document=index,
        line=line,
        path=path,
        notes=tuple(notes),
        unresolved=unresolved,
        flag_lines=dict(flag_lines),
    )


def _flag_lines(container: Mapping[str, Any], at: str, lines: dict[str, int]) -> dict[str, int]:
    """{option: line} for every `--option` (or `--option=value`) that is a list item of
    the container's `command` or `args`; a shell script string gives none."""
    out: dict[str, int] = {}
    for key in ("command", "args"):
        for i, word in enumerate(container.get(key) or ()):
            if isinstance(word, str) and word.startswith("-") and f"{at}.{key}[{i}]" in lines:
                flag = word.split("=", 1)[0].lstrip("-")
                for spelling in (flag, flag.replace("-", "_"), flag.replace("_", "-")):
                    out.setdefault(spelling, lines[f"{at}.{key}[{i}]"])
    return out


def _env(container: Mapping[str, Any]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for item in container.get("env") or ():
        if isinstance(item, Mapping) and isinstance(item.get("name"), str):
            value = item.get("value")
            out[item["name"]] = None if value is None else str(value)
    return out


def _field_refs(container: Mapping[str, Any]) -> dict[str, str]:
    """name -> fieldPath of the env entries given by a `valueFrom.fieldRef`."""
    out: dict[str, str] = {}
    for item in container.get("env") or ():
        path = _get(item, "valueFrom", "fieldRef", "fieldPath")
        if isinstance(item, Mapping) and isinstance(item.get("name"), str) and path:
            out[item["name"]] = str(path)
    return out


def _gpus(container: Mapping[str, Any], which: str, index: int, source: str) -> int | None:
    value = _get(container, "resources", which, GPU)
    return _int(value, f"resources.{which}[{GPU!r}]", index, source)


def _int(value: Any, key: str, index: int, source: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value).strip()
    if not isinstance(value, bool) and text.isdigit():
        return int(text)
    raise ManifestError(
        f"must be a whole number of GPUs (got {value!r}, in document {index})",
        key=key,
        file=source,
        value=value,
    )
