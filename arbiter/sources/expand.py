"""Variable references in a container's serve arguments, expanded as the pod would.

Kubernetes expands `$(NAME)` in `command` and `args` from the container's environment
(Kubernetes documentation, "Define a Command and Arguments for a Container": "$(VAR_NAME)
... expanded using the container's environment"); a shell script (`sh -c`) expands `$NAME`
and `${NAME}` itself from the same environment. A manifest only knows the literal `value`s
of `env`, plus what the controllers inject that it states: LeaderWorkerSet's
`LWS_GROUP_SIZE` is the group's `size` (kubernetes-sigs/lws, docs: "LWS_GROUP_SIZE"), and
a pod-index `fieldRef` (`metadata.labels['apps.kubernetes.io/pod-index']`) is checked as
pod 0, the first pod (a StatefulSet's master for SGLang's `--node-rank`). Every other
reference stays as written and is named in `unresolved`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

_REFERENCE = re.compile(
    r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)"
)
POD_INDEX_FIELDS = (
    "metadata.labels['apps.kubernetes.io/pod-index']",
    "metadata.labels['statefulset.kubernetes.io/pod-index']",
)


def known_values(
    env: Mapping[str, str | None], references: Mapping[str, str], group_size: int | None
) -> dict[str, str]:
    """The values a pod's variables take that the manifest states (`references`: name ->
    the fieldRef path of a `valueFrom`)."""
    out = {name: value for name, value in env.items() if value is not None}
    for name, path in references.items():
        if path in POD_INDEX_FIELDS:
            out[name] = "0"
    if group_size is not None:
        out.setdefault("LWS_GROUP_SIZE", str(group_size))
    return out


def expand(
    words: Sequence[str], values: Mapping[str, str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the words with every known reference replaced, the names left unresolved)."""
    unresolved: list[str] = []

    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2) or match.group(3)
        if name in values:
            return values[name]
        if name not in unresolved:
            unresolved.append(name)
        return match.group(0)

    return tuple(_REFERENCE.sub(one, word) for word in words), tuple(unresolved)
