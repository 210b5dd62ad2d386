"""`arbiter devices` and `arbiter models`: what `--device` and `--model` accept by name.

`devices` lists the built-in device catalog (`constraints.facts.devices.CATALOG`: memory as
nvidia-smi reports it, compute capability, bandwidth, data types, the other names each
answers to); `models` the bundled model catalog (`constraints.facts.catalog`: entry name,
Hugging Face id and aliases, any of which `--model` takes) and the model configs shipped
under examples/models and tests/fixtures/models (which `compare --model` takes by name).
"""

from __future__ import annotations

from typing import Any

from .console import out, print_json
from .options import FormatOption, JsonOption, output_format


def device_rows() -> list[dict[str, Any]]:
    """One row per catalog device, in catalog order."""
    from constraints.facts import devices  # the catalog loads only when listed

    return [
        {
            "name": spec.name,
            "memory_mib": spec.memory_mib,
            "sm": spec.sm,
            "bandwidth_gbs": spec.bandwidth_gbs,
            "dtypes": list(spec.dtypes),
            "aliases": list(devices._ALIASES.get(spec.name, ())),
        }
        for spec in devices.CATALOG.values()
    ]


def model_rows() -> dict[str, Any]:
    """The catalog entries (name, id, aliases) and the bundled config files' names."""
    from constraints.facts import catalog  # the catalog loads only when listed

    from ..compare.intent import bundled_models  # (the same reason)

    entries = [
        {
            "name": name,
            "id": str(item["id"]),
            "aliases": [str(a) for a in item.get("aliases") or ()],
        }
        for name, item in sorted(catalog.index().items())
    ]
    return {"catalog": entries, "configs": list(bundled_models())}


def devices(format_: FormatOption = None, as_json: JsonOption = False) -> None:
    """List the built-in devices that `--device` takes by name (e.g. H100-80GB, 8xH200).

    Example: arbiter devices
    """
    fmt = output_format(format_, as_json)
    rows = device_rows()
    if fmt == "json":
        print_json(rows)
        return
    from rich.table import Table  # rich loads with the first table, not with `--help`

    table = Table()
    for name in ("name", "memory", "sm", "bandwidth", "also"):
        table.add_column(name)
    for row in rows:
        table.add_row(
            row["name"],
            f"{row['memory_mib']:,} MiB",
            f"{row['sm'] // 10}.{row['sm'] % 10}",
            f"{row['bandwidth_gbs']:,} GB/s",
            ", ".join(row["aliases"]),
        )
    out.print(table)
    out.print("cpu is the host itself; NxNAME (8xH100) gives the count as well")


def models(format_: FormatOption = None, as_json: JsonOption = False) -> None:
    """List the models that `--model` takes by name: the catalog, by name, Hugging Face id
    or alias, and the bundled config files.

    Example: arbiter models
    """
    fmt = output_format(format_, as_json)
    rows = model_rows()
    if fmt == "json":
        print_json(rows)
        return
    from rich.table import Table  # rich loads with the first table, not with `--help`

    table = Table()
    for name in ("name", "Hugging Face id", "also"):
        table.add_column(name)
    for row in rows["catalog"]:
        table.add_row(row["name"], row["id"], ", ".join(row["aliases"]))
    out.print(table)
    out.print("bundled configs: " + ", ".join(rows["configs"]))
    out.print("--model also takes a config.json, its folder or any Hugging Face id")
