"""Which packages the distribution holds: every package and data folder below the source folders, found.

pyproject.toml holds everything else. The code folders install as ``mineduel.client``,
``mineduel.server`` and ``mineduel.shared`` and the data folders as ``mineduel.assets`` and
``mineduel.locales`` (a ``package-dir`` mapping, so that no generic top-level name lands in
site-packages); setuptools' own ``find`` cannot rename folders, so the subpackages are found here
and a new folder can never be left out of the wheel: every code subpackage (``find_packages``),
every data subfolder (``assets/icons``, ``assets/fonts``, ... as namespace packages) with all its
files. scripts/check_dist.py compares the built wheel and sdist with the tree.
"""

from setuptools import find_namespace_packages, find_packages, setup

CODE = {"mineduel.client": "client", "mineduel.server": "server", "mineduel.shared": "shared"}
DATA = {"mineduel.assets": "assets", "mineduel.locales": "locales"}

packages = [*CODE, *DATA]
package_data: dict[str, list[str]] = {}
for name, folder in CODE.items():
    packages += [f"{name}.{sub}" for sub in find_packages(folder)]
for name, folder in DATA.items():
    subs = [f"{name}.{sub}" for sub in find_namespace_packages(folder, exclude=["*__pycache__*"])]
    packages += subs
    for package in (name, *subs):
        package_data[package] = ["*"]

setup(
    packages=packages,
    package_dir={**CODE, **DATA},
    package_data=package_data,
    exclude_package_data={"": ["*.pyc"]},
)
