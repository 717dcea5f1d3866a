"""Where the client's data files live: from a source checkout, an installed wheel, or a PyInstaller bundle.

Everything goes through :func:`package_dir`, so a frozen build needs exactly one rule: the spec file
copies ``assets/`` to ``mineduel/assets`` and ``locales/`` to ``mineduel/locales`` inside the bundle
(the same layout as the installed packages). When frozen, the bundle root is ``sys._MEIPASS``.

Only the standard library is imported here, so the headless tools can use it without pygame.
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

ASSETS_PACKAGE = "mineduel.assets"
LOCALES_PACKAGE = "mineduel.locales"

FONT_REGULAR = ("fonts", "MineDuelSans-Regular.otf")
FONT_BOLD = ("fonts", "MineDuelSans-Bold.otf")
THEME = ("theme.json",)


def package_dir(package: str) -> Path:
    """The folder holding ``package``'s data files, as a real filesystem path."""
    bundle_root = getattr(sys, "_MEIPASS", None)
    if getattr(sys, "frozen", False) and bundle_root is not None:
        return Path(bundle_root).joinpath(*package.split("."))
    root = resources.files(package)
    if not isinstance(root, Path):  # e.g. imported from a zip: pygame and i18n need real files
        raise RuntimeError(f"{package} is not installed as plain files ({root!r})")
    return root


def asset_path(*parts: str) -> Path:
    """A file inside ``assets/``, e.g. ``asset_path("fonts", "MineDuelSans-Regular.otf")``."""
    return package_dir(ASSETS_PACKAGE).joinpath(*parts)


def locale_dir() -> Path:
    """The folder of the ``mineduel.<locale>.json`` catalogs (what pygame_gui's UIManager is given)."""
    return package_dir(LOCALES_PACKAGE)


def font_path(*, bold: bool = False) -> Path:
    """The shipped pan-CJK subset font, for text drawn by hand with ``pygame.font.Font``."""
    return asset_path(*(FONT_BOLD if bold else FONT_REGULAR))


def theme_path() -> Path:
    """The pygame_gui theme; every element in it uses the shipped font."""
    return asset_path(*THEME)
