"""Load the kubernetes-asyncio client on demand: one edge agent should not pay for ~1500 models.

Why: `import kubernetes_asyncio` imports `kubernetes_asyncio.client`, whose generated
`__init__` imports every API class (`client/api/*.py`) and every model (`client/models/*.py`):
~860 modules and ~63 MB RSS (kubernetes-asyncio 36.1, CPython 3.11), of which an akri process
uses a dozen classes. The agent runs on every edge node: there it is a fifth of its RSS.

Its top-level `__init__` also imports `dynamic`, `stream` and `utils`, which no akri program
uses; `dynamic` imports kubernetes-validate and jsonschema when they are installed (the chart
tools put them in the development venv): another 2 MB and 60 ms for nothing.

How: `install()` puts `LeanFinder` first on `sys.meta_path`. For exactly the four packages in
`LAZY_PACKAGES` it returns the spec the path finder would (same `__path__`,
`__file__`, `__spec__`), with a loader that does not run the package's `__init__`. Instead it
reads that `__init__` with `ast` (`plan_package`) and gives the module what the `__init__` would
have bound: its docstring and literal constants (`__version__`, `__all__`) at once, and every
`from M import N` name through a PEP 562 module `__getattr__` that imports `M` on first access
and caches `N` on the package; submodules (`client.rest`) resolve as they did. So `client.V1Pod`,
`from kubernetes_asyncio.client import ApiClient` and `ApiClient.deserialize`'s lookup of
`"V1Pod"` in `kubernetes_asyncio.client.models` all work, each loading one module; `dir()` and
`__all__` list every name, `vars()` only what is loaded. The name map comes from the installed
package, so it follows kubernetes-asyncio upgrades; an `__init__` with any other kind of
statement cannot be replayed faithfully and runs eagerly as before, with a `RuntimeWarning`.
Unknown names raise `AttributeError`. Concurrent first accesses are serialised by importlib's
per-module import locks; caching the result on the package is an idempotent write.

Too late: when one of the packages is already in `sys.modules` (kubernetes_asyncio was imported
first), `install()` changes nothing and returns False. It does not raise: a late install costs
memory, never correctness, whereas an error would turn a harmless import order (a test, a
benchmark, a program embedding akri) into a crash.

Where: `install()` is called by each program before it imports kubernetes-asyncio, and only
there: at the top of the `akri-agent` and `akri-controller` entry modules (`akri.agent.main`,
`akri.controller.main`: their own imports load the client, and `python -m` runs them too) and
first thing in `akri.cli.main` (its commands import the client when they run; `akri sim` runs
the simulator's cluster in that process). The tests install it in `tests/conftest.py`, so they
run the client as the programs do. `akri-discovery-handler` does not call it: no handler imports
kubernetes-asyncio. Importing an akri package installs nothing, so a program embedding akri
chooses for itself. `tests/kube/test_lean_imports.py` checks each program, and that
kubernetes-asyncio still has the layout this relies on.

What it saves (bench/bench_agent_scale.py, 1000 Instances with their plugins and the kubelet's
ListAndWatch streams, kubernetes-asyncio 36.1, CPython 3.11, two runs of two agents each): the
agent's RSS after settling is 150.1 and 151.9 MB with it, 183.3 and 188.7 MB without (its target
is 150 MB); importing the agent alone takes 73.8 MB with it, 107.3 MB without.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

LAZY_PACKAGES = frozenset(
    {
        "kubernetes_asyncio",
        "kubernetes_asyncio.client",
        "kubernetes_asyncio.client.api",
        "kubernetes_asyncio.client.models",
    }
)

_install_lock = threading.Lock()


@dataclass(frozen=True)
class PackagePlan:
    """What a package `__init__` binds, without running it.

    `lazy` maps an exported name to `(module, attribute)`, the module to import and the attribute
    to take from it; attribute None means the name is the module itself (`from . import rest`).
    """

    doc: str | None
    constants: Mapping[str, object]
    lazy: Mapping[str, tuple[str, str | None]]


def plan_package(source: str, package: str) -> PackagePlan | None:
    """Read a package `__init__`; None if it does anything besides imports and constants.

    Accepted statements: a docstring, `from __future__ import ...`, `from M import N [as A]`
    (absolute or relative, no `*`), `import M as A` and `NAME = <literal>`. Later bindings
    win, as when run.
    """
    doc: str | None = None
    constants: dict[str, object] = {}
    lazy: dict[str, tuple[str, str | None]] = {}
    body = ast.parse(source).body
    for index, node in enumerate(body):
        if index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            doc = node.value.value if isinstance(node.value.value, str) else None
        elif isinstance(node, ast.ImportFrom):
            if node.module == "__future__":
                continue
            if any(alias.name == "*" for alias in node.names):
                return None
            module = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            for alias in node.names:
                bound = alias.asname or alias.name
                target = (f"{package}.{alias.name}", None) if module == package else None
                lazy[bound] = target or (module, alias.name)
                constants.pop(bound, None)
        elif isinstance(node, ast.Import):
            if any(alias.asname is None for alias in node.names):
                return None  # `import a.b` binds `a`: not worth replaying
            for alias in node.names:
                assert alias.asname is not None
                lazy[alias.asname] = (alias.name, None)
                constants.pop(alias.asname, None)
        elif isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, TypeError):
                return None
            for target_node in node.targets:
                assert isinstance(target_node, ast.Name)
                constants[target_node.id] = value
                lazy.pop(target_node.id, None)
        elif not isinstance(node, ast.Pass):
            return None
    return PackagePlan(doc, constants, lazy)


def _make_lazy(module: ModuleType, plan: PackagePlan) -> None:
    """Give `module` the plan's constants and a `__getattr__`/`__dir__` for its lazy names."""
    package = module.__name__
    module.__doc__ = plan.doc
    module.__dict__.update(plan.constants)
    module.__dict__.setdefault("__all__", sorted(plan.lazy))

    def __getattr__(name: str) -> Any:
        target = plan.lazy.get(name)
        if target is not None:
            source, attribute = target
            defining = importlib.import_module(source)
            if attribute is None:
                value: Any = defining
            elif hasattr(defining, attribute):
                value = getattr(defining, attribute)
            else:
                raise ImportError(
                    f"{package} exports {name!r} from {source}, which has no {attribute!r}",
                    name=source,
                )
        elif (
            name.isidentifier()
            and not name.startswith("__")
            and importlib.util.find_spec(f"{package}.{name}") is not None
        ):
            value = importlib.import_module(f"{package}.{name}")  # a submodule, as when eager
        else:
            raise AttributeError(
                f"module {package!r} has no attribute {name!r} (akri.kube.lean: not a name "
                f"its __init__ exports nor a submodule)",
                name=name,
                obj=module,
            )
        setattr(module, name, value)
        return value

    def __dir__() -> Sequence[str]:
        return sorted(set(module.__dict__) | set(plan.lazy))

    module.__dict__.update(__getattr__=__getattr__, __dir__=__dir__)


class LazyPackageLoader(importlib.abc.Loader):
    """Executes a package as `plan_package` describes it; the eager loader if it cannot."""

    def __init__(self, eager: importlib.abc.Loader) -> None:
        self.eager = eager

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # the default module; importlib sets __spec__, __path__, __file__

    def exec_module(self, module: ModuleType) -> None:
        get_source = getattr(self.eager, "get_source", None)
        source = get_source(module.__name__) if get_source is not None else None
        plan = plan_package(source, module.__name__) if source is not None else None
        if plan is None:
            warnings.warn(
                f"akri.kube.lean: {module.__name__}/__init__.py is not only imports and "
                f"constants; importing it eagerly",
                RuntimeWarning,
                stacklevel=2,
            )
            self.eager.exec_module(module)
            return
        _make_lazy(module, plan)


class LeanFinder(importlib.abc.MetaPathFinder):
    """Finds `LAZY_PACKAGES` where the path finder would, with a loader that defers members."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in LAZY_PACKAGES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            return None  # not a plain package directory: leave it to the normal import
        spec.loader = LazyPackageLoader(spec.loader)
        return spec


def install() -> bool:
    """Load the kubernetes-asyncio client packages lazily from now on; safe to call repeatedly.

    Returns True when lazy loading is in effect, False when it is too late because one of the
    packages was already imported eagerly; that case changes nothing (see the module docstring).
    """
    with _install_lock:
        if any(isinstance(finder, LeanFinder) for finder in sys.meta_path):
            return True
        if any(name in sys.modules for name in LAZY_PACKAGES):
            return False
        sys.meta_path.insert(0, LeanFinder())
        return True
