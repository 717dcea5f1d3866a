"""The release number of MINE DUEL: the one place it is written.

pyproject.toml reads it (``dynamic = ["version"]``), so the wheel's metadata, ``mine-duel --version``,
``mine-duel-server --version``, the ``hello.client`` and ``welcome.server.version`` fields and the
records' ``client.version`` all say the same thing; CHANGELOG.md's newest release heading must match
(tests/test_packaging.py). Plain text, no imports: setuptools reads it without importing the package.
"""

VERSION = "0.2.0"
RELEASED = "2026-12-01"  # VERSION's date: CHANGELOG.md's heading and the AppStream <release> say it too
