"""The shape of our imports, read with `ast`: no cycle among our modules, dependencies
point one way (engine -> arbiter -> constraints), every import inside a function says why
it is there, and the packages import only what `pyproject.toml` declares."""

from __future__ import annotations

import sys

import pytest

from tests.import_graph import PACKAGES, ROOT, Import, cycles, graph, imports, module_files

LAYERS = {"constraints": 0, "arbiter": 1, "engine": 2}  # a module imports its layer or below

# import name -> distribution name, where they differ
DISTRIBUTIONS = {"yaml": "pyyaml", "prometheus_client": "prometheus-client"}
DISTRIBUTIONS["pydantic_core"] = "pydantic-core"
# modules loaded only when an optional backend runs (they may import its extra at the top)
OPTIONAL_MODULES = {
    "engine.kernels._triton_kernels": "triton",
    "engine.kernels._triton_fused": "triton",
}


def _lazy_why(imp: Import) -> str:
    """The comment on a lazy import, or on the import or comment lines just above it."""
    path = module_files()[imp.source]
    lines = path.read_text(encoding="utf-8").splitlines()
    if imp.comment:
        return imp.comment
    i = imp.line - 2
    while i >= 0:
        text = lines[i].strip()
        if text.startswith("#"):
            return text
        if not text.startswith(("from ", "import ")):
            return ""
        if "#" in text:  # an import just above, with its reason
            return text.split("#", 1)[1]
        i -= 1
    return ""


def test_the_graph_sees_every_module_and_the_imports_between_them():
    files = module_files()
    assert {"arbiter.solve", "arbiter.cli", "arbiter.service.app", "engine.cli"} <= set(files)
    g = graph()
    assert g.has_edge("arbiter.solve", "arbiter.compile")  # a module-level import
    assert g.has_edge("arbiter.cli.solve", "arbiter.application.solve")  # a lazy one
    assert not g.has_edge("arbiter.cli", "engine.cli")


def test_no_import_cycle_among_our_modules():
    assert cycles(limit=200) == []


def test_the_cycle_finder_sees_a_cycle_even_through_a_lazy_import(tmp_path):
    package = tmp_path / "constraints"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("def f():\n    from .a import x  # why: a test\n")
    (package / "c.py").write_text("from .a import b\n")  # no cycle through c
    assert [sorted(c) for c in cycles(tmp_path)] == [["constraints.a", "constraints.b"]]


def test_dependencies_point_one_way():
    files = module_files()
    backwards = [
        f"{imp.source}:{imp.line} imports {imp.target}"
        for imp in imports()
        if imp.target in files
        and LAYERS[imp.target.split(".")[0]] > LAYERS[imp.source.split(".")[0]]
    ]
    assert backwards == []


def _pack(module: str) -> str | None:
    """The engine a module's pack belongs to, in either layer (`arbiter.engines.vllm.map`
    and `constraints.engines.vllm.rules` -> "vllm"); None outside the packs."""
    parts = module.split(".")
    if len(parts) > 2 and parts[0] in ("arbiter", "constraints") and parts[1] == "engines":
        return parts[2]
    return None


def packs_crossed(found: list[Import]) -> list[str]:
    """Imports from one engine pack into another."""
    return [
        f"{imp.source}:{imp.line} imports {imp.target}"
        for imp in found
        if _pack(imp.source) and _pack(imp.target) and _pack(imp.source) != _pack(imp.target)
    ]


def test_no_engine_pack_imports_another():
    found = imports()
    assert {_pack(i.source) for i in found} >= {"trtllm", "vllm", "sglang", "mlc"}
    assert packs_crossed(found) == []


def test_the_pack_check_sees_one_pack_importing_another(tmp_path):
    for name in ("arbiter", "arbiter/engines", "arbiter/engines/a", "arbiter/engines/b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / "arbiter/engines/a/map.py").write_text("from ..b import judge\n")
    (tmp_path / "arbiter/engines/b/judge.py").write_text("from . import map  # its own: fine\n")
    (tmp_path / "arbiter/engines/b/map.py").write_text("")
    crossed = packs_crossed(imports(tmp_path))
    assert crossed == ["arbiter.engines.a.map:1 imports arbiter.engines.b.judge"]


def test_every_import_inside_a_function_says_why():
    silent = [f"{i.source}:{i.line} ({i.target})" for i in imports() if i.lazy and not _lazy_why(i)]
    assert silent == []


def test_no_engine_pack_imports_another_engines_pack():
    files = module_files()
    crossing = [
        f"{imp.source}:{imp.line} imports {imp.target}"
        for imp in imports()
        if imp.target in files
        and _pack(imp.source)
        and _pack(imp.target)
        and _pack(imp.source) != _pack(imp.target)
    ]
    assert crossing == []


def test_the_pack_check_sees_a_crossing(tmp_path):
    for engine in ("vllm", "sglang"):
        folder = tmp_path / "constraints" / "engines" / engine
        folder.mkdir(parents=True)
        (folder / "__init__.py").write_text("")
    for folder in (tmp_path / "constraints", tmp_path / "constraints" / "engines"):
        (folder / "__init__.py").write_text("")
    (tmp_path / "constraints" / "engines" / "vllm" / "a.py").write_text(
        "from constraints.engines.sglang import b\n"
    )
    (tmp_path / "constraints" / "engines" / "sglang" / "b.py").write_text("x = 1\n")
    crossing = [
        (imp.source, _pack(imp.target))
        for imp in imports(tmp_path)
        if _pack(imp.source) and _pack(imp.target) and _pack(imp.source) != _pack(imp.target)
    ]
    assert crossing == [("constraints.engines.vllm.a", "sglang")]


def _declared() -> tuple[set[str], set[str]]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    def names(specs: list[str]) -> set[str]:
        out = set()
        for spec in specs:
            name = spec.split(";")[0]
            for stop in "<>=!~[ ":
                name = name.split(stop)[0]
            out.add(name.strip().lower().replace("_", "-"))
        return out

    extras = set().union(*(names(v) for v in project.get("optional-dependencies", {}).values()))
    return names(project["dependencies"]), extras


def test_the_packages_import_only_declared_dependencies():
    required, extras = _declared()
    undeclared, optional_at_top = [], []
    for imp in imports():
        top = imp.target.split(".")[0]
        if top in PACKAGES or top == "__future__" or top in sys.stdlib_module_names:
            continue
        dist = DISTRIBUTIONS.get(top, top).lower().replace("_", "-")
        if dist not in required | extras:
            undeclared.append(f"{imp.source}:{imp.line} imports {top}")
        elif dist not in required and not imp.lazy and OPTIONAL_MODULES.get(imp.source) != top:
            optional_at_top.append(f"{imp.source}:{imp.line} imports the optional {top}")
    assert undeclared == []
    assert optional_at_top == []
    assert "httpx" not in required  # the service's test client stays a [dev] extra


@pytest.mark.parametrize(
    ("module", "absent"),
    [
        ("arbiter.cli", ("ortools", "engine", "fastapi", "torch")),  # `arbiter schema` stays fast
        ("engine.cli", ("ortools", "torch")),  # the console script, `run` included
        ("arbiter.service", ("ortools", "torch")),  # the solver loads in worker processes
    ],
)
def test_the_lazy_imports_keep_heavy_packages_out_of_fast_paths(module, absent):
    import subprocess

    code = f"import sys, {module}; print(sorted({{m.split('.')[0] for m in sys.modules}}))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert not [name for name in absent if f"'{name}'" in loaded]
