"""akri.kube.lean: the kubernetes-asyncio client loads its API classes and models on first use.

Import state is global, so everything touching kubernetes_asyncio runs in a fresh interpreter;
`-W error::RuntimeWarning` there turns a silent fallback to the eager `__init__` into a failure.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from akri.kube.lean import LazyPackageLoader, plan_package

LEAN_LIMIT = 150  # kubernetes_asyncio modules; eager import loads ~860

COUNT = "sum(m.startswith('kubernetes_asyncio') for m in sys.modules)"


def run_python(code: str) -> str:
    """Run `code` in a fresh interpreter; its stdout, or fail with its stderr."""
    result = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_members_load_on_first_access() -> None:
    run_python(f"""
        import sys
        from akri.kube import lean
        assert lean.install()
        import kubernetes_asyncio
        from kubernetes_asyncio import client
        assert {COUNT} < {LEAN_LIMIT}, {COUNT}
        assert "kubernetes_asyncio.client.models.v1_pod" not in sys.modules
        assert "kubernetes_asyncio.client.api.apps_v1_api" not in sys.modules
        pod = client.V1Pod
        assert "kubernetes_asyncio.client.models.v1_pod" in sys.modules
        assert pod is kubernetes_asyncio.client.models.V1Pod
        assert pod is sys.modules["kubernetes_asyncio.client.models.v1_pod"].V1Pod
        assert client.api.AppsV1Api is client.AppsV1Api
        from kubernetes_asyncio.client import ApiClient, CoreV1Api, CustomObjectsApi
        from kubernetes_asyncio.client.models import V1ObjectMeta
        assert V1ObjectMeta is client.V1ObjectMeta
        assert client.rest is sys.modules["kubernetes_asyncio.client.rest"]
        assert client.__version__ == kubernetes_asyncio.__version__
        spec = client.__spec__
        assert spec.name == "kubernetes_asyncio.client" and spec.origin == client.__file__
        assert client.__file__.endswith("kubernetes_asyncio/client/__init__.py")
        assert client.__path__ == [client.__file__.rpartition("/")[0]]
        assert client.models.__path__[0].endswith("kubernetes_asyncio/client/models")
        assert {COUNT} < {LEAN_LIMIT}, {COUNT}
    """)


def test_typed_deserialization() -> None:
    run_python("""
        import asyncio, json
        from akri.kube import lean
        lean.install()
        from kubernetes_asyncio import client

        class Response:
            data = json.dumps({
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "broker", "labels": {"akri.sh/instance": "i"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}], "nodeName": "n"},
                "status": {"phase": "Running"},
            })

        async def deserialize():
            async with client.ApiClient() as api:
                return api.deserialize(Response(), "V1Pod")

        pod = asyncio.run(deserialize())
        assert isinstance(pod, client.V1Pod)
        assert isinstance(pod.metadata, client.V1ObjectMeta)
        assert pod.metadata.labels == {"akri.sh/instance": "i"}
        assert isinstance(pod.spec.containers[0], client.V1Container)
        assert pod.spec.containers[0].image == "nginx" and pod.status.phase == "Running"
    """)


def test_config_watch_and_dynamic_still_work() -> None:
    run_python(f"""
        import asyncio, json, sys
        from akri.kube import lean
        lean.install()
        from kubernetes_asyncio import client, config, dynamic, watch
        assert callable(config.load_kube_config) and callable(config.load_incluster_config)
        assert dynamic.DynamicClient
        event = json.dumps({{"type": "ADDED", "object": {{"metadata": {{"name": "p"}}}}}})

        async def unmarshal():
            async with client.ApiClient() as api, watch.Watch() as stream:
                kind = stream.get_return_type(client.CoreV1Api(api).list_namespaced_pod)
                return kind, stream.unmarshal_event(event, kind)

        kind, unmarshalled = asyncio.run(unmarshal())
        assert kind == "V1Pod" and isinstance(unmarshalled["object"], client.V1Pod), unmarshalled
        assert unmarshalled["object"].metadata.name == "p"
        assert {COUNT} < {LEAN_LIMIT}, {COUNT}
    """)


def test_unknown_names_fail_loudly() -> None:
    run_python("""
        from akri.kube import lean
        lean.install()
        from kubernetes_asyncio import client
        for package in (client, client.api, client.models):
            try:
                package.V1NoSuchThing
            except AttributeError as error:
                assert "V1NoSuchThing" in str(error), error
            else:
                raise AssertionError(package)
            assert not hasattr(package, "__wrapped__")
        try:
            from kubernetes_asyncio.client import NoSuchApi
        except ImportError as error:
            assert "NoSuchApi" in str(error), error
        else:
            raise AssertionError("imported NoSuchApi")
    """)


def test_dir_and_all_list_the_lazy_names() -> None:
    run_python("""
        import sys
        from akri.kube import lean
        lean.install()
        from kubernetes_asyncio import client
        assert {"CoreV1Api", "CustomObjectsApi", "ApiClient", "V1Pod"} <= set(dir(client))
        assert "CustomObjectsApi" in dir(client.api) and "V1ObjectMeta" in dir(client.models)
        assert set(client.__all__) <= set(dir(client)) and "V1Pod" in client.__all__
        assert "kubernetes_asyncio.client.models.v1_pod" not in sys.modules
    """)


def exported(lean: bool) -> dict[str, str]:
    """Every name the three packages export, as the qualified name of what it resolves to."""
    out = run_python(f"""
        import json
        from akri.kube import lean
        if {lean}:
            assert lean.install()
        from kubernetes_asyncio import client
        print(json.dumps({{
            f"{{package.__name__}}.{{name}}":
                f"{{getattr(package, name).__module__}}.{{getattr(package, name).__qualname__}}"
            for package in (client, client.api, client.models)
            for name in package.__all__
        }}))
    """)
    resolved: dict[str, str] = json.loads(out)
    return resolved


def test_every_exported_name_resolves_as_when_eager() -> None:
    lean = exported(lean=True)
    assert len(lean) > 1000
    assert lean == exported(lean=False)


def test_concurrent_first_access_gives_one_class() -> None:
    run_python("""
        import threading
        from concurrent.futures import ThreadPoolExecutor
        from akri.kube import lean
        lean.install()
        from kubernetes_asyncio import client
        names = ["V1Node", "V1Service", "V1Deployment", "CoreV1Api", "V1Lease"] * 8
        barrier = threading.Barrier(len(names))

        def touch(name):
            barrier.wait()
            return getattr(client, name)

        with ThreadPoolExecutor(len(names)) as pool:
            classes = list(pool.map(touch, names))
        for name, cls in zip(names, classes):
            assert cls is getattr(client, name) is getattr(client.models, name, cls), name
    """)


def test_install_is_idempotent_and_a_no_op_when_too_late() -> None:
    run_python("""
        import sys
        from akri.kube import lean
        assert lean.install() and lean.install()
        assert sum(isinstance(f, lean.LeanFinder) for f in sys.meta_path) == 1
    """)
    run_python("""
        import sys
        import kubernetes_asyncio
        from akri.kube import lean
        assert lean.install() is False
        assert not any(isinstance(f, lean.LeanFinder) for f in sys.meta_path)
        assert "kubernetes_asyncio.client.models.v1_pod" in sys.modules  # eager, untouched
    """)


def test_kubernetes_asyncio_keeps_the_layout_the_hook_relies_on() -> None:
    """Fails when a kubernetes-asyncio release changes what `akri.kube.lean` replays: each lazy
    package still a plain package whose `__init__` is only imports and constants (else the
    RuntimeWarning, an error here), every name it exports still in a module of its own, and
    none of those modules loaded by installing and importing the client."""
    run_python(f"""
        import importlib, importlib.util, sys
        from akri.kube import lean
        assert lean.install()
        import kubernetes_asyncio.client
        targets = set()
        for name in sorted(lean.LAZY_PACKAGES):
            package = importlib.import_module(name)
            loader = package.__spec__.loader
            assert isinstance(loader, lean.LazyPackageLoader), name
            plan = lean.plan_package(loader.eager.get_source(name), name)
            assert plan is not None and plan.lazy, name
            targets |= {{module for module, _ in plan.lazy.values()}}
        assert len(targets) > 800, len(targets)  # ~840 modules in 36.1
        missing = [m for m in sorted(targets) if importlib.util.find_spec(m) is None]
        assert not missing, missing[:5]
        assert {COUNT} < {LEAN_LIMIT}, {COUNT}
        assert not any(m.startswith("kubernetes_asyncio.client.models.v1") for m in sys.modules)
    """)


@pytest.mark.parametrize("entry_point", ["akri.agent.main", "akri.controller.main"])
def test_programs_are_lean(entry_point: str) -> None:
    run_python(f"""
        import sys
        import {entry_point}
        import kubernetes_asyncio
        from akri.kube.lean import LazyPackageLoader
        assert isinstance(kubernetes_asyncio.__spec__.loader, LazyPackageLoader)
        for name in ("client", "client.api", "client.models"):
            module = sys.modules.get("kubernetes_asyncio." + name)
            if module is not None:  # not loaded at all when nothing of it is used
                assert isinstance(module.__spec__.loader, LazyPackageLoader), name
        assert {COUNT} < {LEAN_LIMIT}, {COUNT}
        unused = ("kubernetes_asyncio.dynamic", "kubernetes_validate", "jsonschema")
        assert not [m for m in unused if m in sys.modules]
    """)


def test_importing_akri_packages_installs_nothing() -> None:
    run_python("""
        import sys
        import akri.agent.agent, akri.controller.controller, akri.sim.cluster
        import akri.discovery_handlers.main
        from akri.kube.lean import LeanFinder
        assert not any(isinstance(f, LeanFinder) for f in sys.meta_path)
        assert "kubernetes_asyncio.client.models.v1_pod" in sys.modules  # eager, as imported
    """)


def test_the_discovery_handler_program_never_imports_kubernetes() -> None:
    run_python(f"""
        import sys
        import akri.discovery_handlers.main
        assert {COUNT} == 0, {COUNT}
    """)


def test_cli_installs_it_before_its_commands_reach_kubernetes() -> None:
    run_python(f"""
        import contextlib, io, sys
        import akri.cli
        assert {COUNT} == 0, {COUNT}
        with contextlib.redirect_stdout(io.StringIO()):
            assert akri.cli.main(["instance-name", "cam", "foo0"]) == 0
        from akri.sim.main import run  # what `akri sim` imports
        assert 0 < {COUNT} < {LEAN_LIMIT}, {COUNT}
    """)


def test_plan_reads_imports_and_constants() -> None:
    source = textwrap.dedent('''
        """The docstring."""
        from __future__ import annotations
        __version__ = "1.2"
        from pkg.models.pod import Pod
        from .api.core import CoreApi as Core
        from . import rest
        from pkg.old import Pod
        import pkg.watch as watch
        __all__ = ["Pod", "Core"]
    ''')
    plan = plan_package(source, "pkg")
    assert plan is not None
    assert plan.doc == "The docstring."
    assert plan.constants == {"__version__": "1.2", "__all__": ["Pod", "Core"]}
    assert plan.lazy == {
        "Pod": ("pkg.old", "Pod"),
        "Core": ("pkg.api.core", "CoreApi"),
        "rest": ("pkg.rest", None),
        "watch": ("pkg.watch", None),
    }


@pytest.mark.parametrize(
    "statement",
    [
        "import os",
        "import pkg.a, pkg.b as b",
        "from pkg.models import *",
        "if True:\n    pass",
        "X = compute()",
        "X: int = 1",
    ],
)
def test_plan_refuses_what_it_cannot_replay(statement: str) -> None:
    assert plan_package(f"from pkg.a import A\n{statement}\n", "pkg") is None


@pytest.fixture
def package(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[str, Path]]:
    """A fresh package directory with a unique name; its modules leave sys.modules afterwards."""
    name = f"lean_sample_{request.node.name.replace('[', '_').strip(']')}"
    directory = tmp_path / name
    directory.mkdir()
    (directory / "things.py").write_text("class Thing:\n    pass\n")
    yield name, directory
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]


def load(name: str, directory: Path) -> ModuleType:
    """Import the package at `directory` through LazyPackageLoader, as LeanFinder would."""
    spec = importlib.util.spec_from_file_location(
        name, directory / "__init__.py", submodule_search_locations=[str(directory)]
    )
    assert spec is not None
    assert spec.loader is not None
    spec.loader = LazyPackageLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_loader_defers_submodules(package: tuple[str, Path]) -> None:
    name, directory = package
    (directory / "__init__.py").write_text("from .things import Thing\nfrom .things import Gone\n")
    module = load(name, directory)
    assert f"{name}.things" not in sys.modules
    assert module.Thing is sys.modules[f"{name}.things"].Thing
    with pytest.raises(ImportError, match="no 'Gone'"):
        _ = module.Gone


def test_loader_runs_an_unreadable_init_eagerly(package: tuple[str, Path]) -> None:
    name, directory = package
    (directory / "__init__.py").write_text("import os\nfrom .things import Thing\n")
    with pytest.warns(RuntimeWarning, match="importing it eagerly"):
        module = load(name, directory)
    assert f"{name}.things" in sys.modules
    assert "Thing" in vars(module)
