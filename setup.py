"""Which packages the distribution holds: every package below client/, server/ and shared/, found.

pyproject.toml holds everything else. The three code folders install as ``mineduel.client``,
``mineduel.server`` and ``mineduel.shared`` (a ``package-dir`` mapping, so that no generic
top-level name lands in site-packages); setuptools' own ``find`` cannot rename folders, so the
subpackages are found here and a new folder can never be left out of the wheel.
"""

from setuptools import find_packages, setup

CODE = {"mineduel.client": "client", "mineduel.server": "server", "mineduel.shared": "shared"}
DATA = {"mineduel.assets": "assets", "mineduel.locales": "locales"}

packages = [*CODE, *DATA]
for name, folder in CODE.items():
    packages += [f"{name}.{sub}" for sub in find_packages(folder)]

setup(packages=packages, package_dir={**CODE, **DATA})
