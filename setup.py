"""Maps the `akri.*` packages of every product component folder into one distribution.

`akri` is a PEP 420 namespace spread over the source roots below; setuptools' own
discovery cannot merge one namespace from several roots, so the mapping is computed here.
`sim/` is not among them: it is its own distribution, akri-sim (sim/pyproject.toml).
"""

from pathlib import Path

from setuptools import find_namespace_packages, setup

SOURCE_ROOTS = ("core", "agent", "controller", "discovery-handlers")

packages: list[str] = []
package_dir: dict[str, str] = {}
for root in SOURCE_ROOTS:
    for package in find_namespace_packages(root, include=["akri.*"]):
        if not (Path(root) / package.replace(".", "/") / "__init__.py").exists() and package.count(".") > 1:
            continue  # data-only folders (e.g. proto sources) ride along as package data
        packages.append(package)
        package_dir[package] = f"{root}/{package.replace('.', '/')}"

# Modules that sit directly in the `akri` namespace (the CLI, naming, the slot pool) live in core/.
py_modules = [f"akri.{path.stem}" for path in sorted(Path("core/akri").glob("*.py"))]
package_dir["akri"] = "core/akri"

setup(packages=packages, package_dir=package_dir, py_modules=py_modules)
