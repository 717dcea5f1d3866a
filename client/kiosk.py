"""Kiosk mode (``mine-duel --kiosk``): a public, touch-first machine that nobody but its operator can leave.

Operators' guide: docs/KIOSK.md. What this module adds to the ordinary client:

* :class:`KioskConfig` and :func:`load_config` — the TOML file (``--kiosk-config PATH``, else
  ``/etc/mine-duel/kiosk.toml``, else ``kiosk.toml`` in the platform's site config folder). Every key
  is checked on its own: a bad value means that key's default and a log line; a missing, unreadable
  or unparsable file means all defaults and a log line. Loading never raises.
* :class:`Kiosk` — the running policy the app consults for every raw pygame event and every frame:

  - window-manager close requests (``QUIT``, ``WINDOWCLOSE``: the close button, Alt+F4 under a window
    manager) are ignored; Escape and the menus work as usual, but the menus have no Quit entry
    (:meth:`KioskConfig.allowed`). SIGTERM still stops the client — it is the operator's tool: SDL is
    told not to turn signals into ``QUIT`` events, and Twisted's handler stops the reactor;
  - the **admin chord** quits: hold the configured keys (default Ctrl+Alt+Shift+Q) for
    ``admin_hold_seconds``; with an ``admin_pin``, a PIN prompt follows (type the digits, Enter);
  - after ``idle_seconds`` without input the app forgets the player (:meth:`App.new_player
    <mineduel.client.app.App.new_player>`) and shows the start screen — the language picker — again;
    the last ``idle_warning_seconds`` show a "Still playing?" countdown that any touch dismisses
    (that touch does nothing else);
  - **attract mode** (issue 19): with ``attract_server`` set, a start screen nobody touched for
    ``attract_idle_seconds`` gives way to that server's live matches, each watched for
    ``attract_rotate_seconds`` (client/scenes/spectate_attract.py); any touch or key ends it (and does
    nothing else) and shows the start screen again.

Everything here runs on the app's clock, so tests drive it with a fake one.
"""

from __future__ import annotations

import hmac
import logging
import math
import os
import tomllib
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs
import pygame

from mineduel.client.i18n import LANGUAGES
from mineduel.client.records import RecordStore, WriteResult
from mineduel.client.scenes.base import Allowed
from mineduel.client.settings import APP_NAME, Settings
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.text import blit_paragraph, blit_text, paragraph_height
from mineduel.shared.wire import codec, links

if TYPE_CHECKING:
    from mineduel.client.scenes.base import Context
    from mineduel.client.scenes.spectate_attract import AttractLoop, AttractScene, AttractTarget

log = logging.getLogger(__name__)

CONFIG_NAME = "kiosk.toml"
ETC_CONFIG = Path("/etc/mine-duel") / CONFIG_NAME
MAX_CONFIG_BYTES = 64 * 1024
DIFFICULTIES = ("easy", "normal", "hard", "expert")  # shared.ai.levels.Level
PIN_TIMEOUT = 30.0  # seconds the PIN prompt waits for the operator
PIN_LENGTHS = (4, 12)

#: SDL hints for a kiosk window, set (unless the operator already set them) before the display starts.
SDL_HINTS = {
    "SDL_NO_SIGNAL_HANDLERS": "1",  # SIGTERM/SIGINT are not turned into QUIT events (QUIT is ignored here)
    "SDL_VIDEO_MINIMIZE_ON_FOCUS_LOSS": "0",  # a fullscreen window stays up when something else grabs focus
    "SDL_WINDOWS_NO_CLOSE_ON_ALT_F4": "1",  # Windows: Alt+F4 is not a close request
    "SDL_VIDEO_ALLOW_SCREENSAVER": "0",
}

# ----- the admin chord -------------------------------------------------------------------------------------

_MOD_ALIASES = {"ctrl": "ctrl", "control": "ctrl", "alt": "alt", "option": "alt", "shift": "shift",
                "meta": "meta", "super": "meta", "gui": "meta", "win": "meta", "cmd": "meta"}
_MOD_ORDER = ("ctrl", "alt", "shift", "meta")
_MOD_BITS = {"ctrl": pygame.KMOD_CTRL, "alt": pygame.KMOD_ALT, "shift": pygame.KMOD_SHIFT, "meta": pygame.KMOD_GUI}
_MOD_KEYS = {
    "ctrl": {pygame.K_LCTRL, pygame.K_RCTRL},
    "alt": {pygame.K_LALT, pygame.K_RALT, pygame.K_MODE},
    "shift": {pygame.K_LSHIFT, pygame.K_RSHIFT},
    "meta": {pygame.K_LGUI, pygame.K_RGUI},
}
_ALL_MOD_KEYS = set().union(*_MOD_KEYS.values())


def _key_code(name: str) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # key_code works without pygame.init(); it just says so
        return pygame.key.key_code(name)


@dataclass(frozen=True, slots=True)
class Chord:
    """Modifiers plus one key, e.g. ``ctrl+alt+shift+q``; held down together for a while, it quits."""

    mods: frozenset[str]
    key: str

    @classmethod
    def parse(cls, text: str) -> Chord:
        """``"ctrl+alt+shift+q"`` → a chord; ``ValueError`` saying what is wrong otherwise."""
        parts = [p.strip().lower() for p in text.split("+")]
        if len(parts) < 3 or not all(parts):
            raise ValueError(f"{text!r}: expected at least two modifiers and a key, e.g. 'ctrl+alt+shift+q'")
        *mod_names, key = parts
        mods = set()
        for name in mod_names:
            if name not in _MOD_ALIASES:
                raise ValueError(f"{text!r}: {name!r} is not a modifier (use ctrl, alt, shift, meta)")
            mods.add(_MOD_ALIASES[name])
        if len(mods) < 2:
            raise ValueError(f"{text!r}: needs two different modifiers, so a player cannot press it by accident")
        if key in _MOD_ALIASES:
            raise ValueError(f"{text!r}: the last part must be an ordinary key, not a modifier")
        try:
            code = _key_code(key)
        except ValueError:
            raise ValueError(f"{text!r}: unknown key {key!r} (use a pygame key name: q, f12, delete, ...)") from None
        if code in _ALL_MOD_KEYS:
            raise ValueError(f"{text!r}: the last part must be an ordinary key, not a modifier")
        return cls(frozenset(mods), key)

    def __str__(self) -> str:
        return "+".join([m for m in _MOD_ORDER if m in self.mods] + [self.key])

    @property
    def keycode(self) -> int:
        return _key_code(self.key)

    def pressed(self, key: int, mod: int) -> bool:
        """A KEYDOWN of the chord's key while all its modifiers are held (others, e.g. Num Lock, are ignored)."""
        return key == self.keycode and all(mod & _MOD_BITS[m] for m in self.mods)

    def released(self, key: int) -> bool:
        """A KEYUP that breaks the chord: its key or one of its modifier keys."""
        return key == self.keycode or any(key in _MOD_KEYS[m] for m in self.mods)


DEFAULT_CHORD = Chord(frozenset({"ctrl", "alt", "shift"}), "q")

# ----- the config file --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KioskConfig:
    """Every setting of a kiosk, with its default (docs/KIOSK.md explains each)."""

    idle_seconds: float = 90.0  # no input this long: back to the start screen (0: never)
    idle_warning_seconds: float = 10.0  # the last seconds of that show a countdown (0: no warning)
    languages: tuple[str, ...] = LANGUAGES  # offered by the picker, in this order; the first is shown behind it
    difficulty: str = "normal"  # preselected for every new game
    online: bool = False  # the menu offers Online play (its network setup screens)
    admin_chord: Chord = DEFAULT_CHORD
    admin_hold_seconds: float = 2.0
    admin_pin: str = ""  # digits asked for after the chord ("": none)
    display: int = 0  # which monitor (0: the first)
    record_folder: Path | None = None  # finished CPU matches' records go here (None: not kept)
    show_cursor: bool = False  # True for a kiosk driven by a mouse or trackball instead of touch
    sound: bool = True  # sound effects (False: silent, and no audio device is opened)
    sound_volume: float = 0.6  # every new player's starting volume, 0-1 (the settings popup changes it for one player)
    attract_server: str = ""  # attract mode's server: "host:port" or an invite link ("": no attract mode)
    attract_rooms: tuple[str, ...] = ()  # room codes to show when the server cannot list its live matches
    attract_idle_seconds: float = 30.0  # an untouched start screen this long starts attract mode
    attract_rotate_seconds: float = 20.0  # each live match is shown this long (less when it ends)
    attract_retry_seconds: float = 15.0  # with no live match, ask again this often
    allow_watch: bool = True  # every new player's "Let others watch" for the rooms they create (§16)

    def attract_target(self) -> AttractTarget | None:
        """Attract mode's server and rooms (``None``: attract mode is off)."""
        return _attract_target(self.attract_server, self.attract_rooms) if self.attract_server else None

    def player_settings(self) -> Settings:
        """The settings every new player starts with: the language rule below, the kiosk's volume, nothing saved."""
        return Settings(language=self.start_language, sound_volume=self.sound_volume, allow_watch=self.allow_watch)

    def allowed(self) -> Allowed:
        """What players may do: no quitting, no files, nothing remembered; online only if configured."""
        return Allowed(quit=False, online=self.online, files=False, save_settings=False)

    @property
    def default_language(self) -> str:
        """The language of the screen behind the picker (and the only one, when only one is offered)."""
        return self.languages[0]

    @property
    def start_language(self) -> str | None:
        """``None``: every new player picks a language first; one language offered: that one, no picker."""
        return self.languages[0] if len(self.languages) == 1 else None


def _number(value: Any, low: float, high: float, *, zero_ok: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"expected a number of seconds, got {value!r}")
    if zero_ok and value == 0:
        return 0.0
    if not low <= value <= high:
        raise ValueError(f"{value!r} is out of range ({'0 or ' if zero_ok else ''}{low:g} to {high:g})")
    return float(value)


def _volume(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ValueError(f"expected a volume from 0 to 1 (e.g. 0.6), got {value!r}")
    return float(value)


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def _languages(value: Any, problems: list[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise ValueError(f"expected a list of language codes from {list(LANGUAGES)}, got {value!r}")
    by_lower = {code.lower(): code for code in LANGUAGES}
    out: list[str] = []
    for item in value:
        code = by_lower.get(item.lower()) if isinstance(item, str) else None
        if code is None:
            problems.append(f"languages: {item!r} is not one of {list(LANGUAGES)}; left out")
        elif code not in out:
            out.append(code)
    if not out:
        raise ValueError("no known language left")
    return tuple(out)


def _difficulty(value: Any) -> str:
    if value not in DIFFICULTIES:
        raise ValueError(f"expected one of {list(DIFFICULTIES)}, got {value!r}")
    return str(value)


def _chord(value: Any) -> Chord:
    if not isinstance(value, str):
        raise ValueError(f"expected a text like 'ctrl+alt+shift+q', got {value!r}")
    return Chord.parse(value)


def _pin(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        value = str(value)
    if not isinstance(value, str) or (value and not (value.isascii() and value.isdigit())):
        raise ValueError("expected digits in quotes, e.g. \"2468\" (or \"\" for no PIN)")
    if value and not PIN_LENGTHS[0] <= len(value) <= PIN_LENGTHS[1]:
        raise ValueError(f"expected {PIN_LENGTHS[0]} to {PIN_LENGTHS[1]} digits")
    return value


def _attract_target(text: str, rooms: tuple[str, ...]) -> AttractTarget:
    """``host:port`` (the default port when none) or an invite link → the server attract mode watches."""
    from mineduel.client.scenes.lobby_seats import is_link, parse_address
    from mineduel.client.scenes.spectate_attract import AttractTarget

    if is_link(text):
        link = links.parse_link(text.strip())
        return AttractTarget(link.host, link.port, link.tls, link.pin, rooms)
    address = parse_address(text)
    if address is None:
        raise ValueError(f"{text!r} is neither host:port nor an invite link")
    return AttractTarget(address[0], address[1], rooms=rooms)


def _server(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected \"host:port\" or an invite link in quotes, got {value!r}")
    if value:
        try:
            _attract_target(value, ())
        except ValueError as exc:
            raise ValueError(str(exc)) from None
    return value.strip()


def _rooms(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or len(value) > 20:
        raise ValueError(f"expected a list of at most 20 room codes, e.g. [\"NYTF23\"], got {value!r}")
    out: list[str] = []
    for item in value:
        try:
            code = codec.room_code(item) if isinstance(item, str) else None
        except ValueError:
            code = None
        if code is None:
            raise ValueError(f"{item!r} is not a room code (6 characters, e.g. \"NYTF23\")")
        if code not in out:
            out.append(code)
    return tuple(out)


def _display(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 15:
        raise ValueError(f"expected a monitor number 0 to 15, got {value!r}")
    return value


def _folder(value: Any) -> Path | None:
    if not isinstance(value, str):
        raise ValueError(f"expected a folder path in quotes, got {value!r}")
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_absolute():
        raise ValueError(f"{value!r} is not an absolute path")
    return path


_CHECKS: dict[str, Callable[..., Any]] = {
    "idle_seconds": lambda v: _number(v, 10, 3600, zero_ok=True),
    "idle_warning_seconds": lambda v: _number(v, 3, 60, zero_ok=True),
    "languages": _languages,
    "difficulty": _difficulty,
    "online": _flag,
    "admin_chord": _chord,
    "admin_hold_seconds": lambda v: _number(v, 0.5, 30),
    "admin_pin": _pin,
    "display": _display,
    "record_folder": _folder,
    "show_cursor": _flag,
    "sound": _flag,
    "sound_volume": _volume,
    "attract_server": _server,
    "attract_rooms": _rooms,
    "attract_idle_seconds": lambda v: _number(v, 5, 3600),
    "attract_rotate_seconds": lambda v: _number(v, 5, 600),
    "attract_retry_seconds": lambda v: _number(v, 5, 600),
    "allow_watch": _flag,
}


def parse_config(data: Mapping[str, Any]) -> tuple[KioskConfig, list[str]]:
    """The settings in ``data`` (a parsed TOML document) and a list of what was wrong with it.

    A key with a bad value keeps its default; an unknown key is reported (a typo would otherwise
    go unnoticed) and ignored.
    """
    problems: list[str] = []
    defaults = KioskConfig()
    values: dict[str, Any] = {}  # the TOML file's values as read, each checked below before KioskConfig gets it
    known = {f.name for f in fields(KioskConfig)}
    for key, value in data.items():
        if key not in known:
            problems.append(f"unknown key {key!r} ignored (known: {', '.join(sorted(known))})")
            continue
        check = _CHECKS[key]
        try:
            values[key] = check(value, problems) if check is _languages else check(value)
        except ValueError as exc:
            problems.append(f"{key}: {exc}; using the default {_show(getattr(defaults, key))}")
    config = replace(defaults, **values)
    if config.idle_seconds and config.idle_warning_seconds >= config.idle_seconds:
        shorter = float(math.floor(config.idle_seconds / 3))
        problems.append(f"idle_warning_seconds must be shorter than idle_seconds; using {shorter:g}")
        config = replace(config, idle_warning_seconds=shorter)
    return config, problems


def default_config_paths() -> tuple[Path, ...]:
    """Where a kiosk looks for its config when ``--kiosk-config`` is not given, in order."""
    site = platformdirs.site_config_path(APP_NAME, appauthor=False) / CONFIG_NAME
    return (ETC_CONFIG,) if site == ETC_CONFIG else (ETC_CONFIG, site)


def load_config(path: Path | None = None) -> tuple[KioskConfig, list[str]]:
    """The kiosk settings from ``path`` (or the first default path that exists) and the problems found.

    Never raises: a missing, unreadable, oversized or unparsable file means all defaults; each problem
    is also logged.
    """
    if path is None:
        for candidate in default_config_paths():
            try:
                if candidate.is_file():
                    path = candidate
                    break
            except OSError:
                continue
        else:
            log.info("kiosk: no config file at %s; using the defaults", " or ".join(map(str, default_config_paths())))
            return KioskConfig(), []
    config, problems = _read(Path(path))
    for problem in problems:
        log.warning("kiosk: %s: %s", path, problem)
    log.info("kiosk: settings from %s%s", path, f" ({len(problems)} problem(s), see above)" if problems else "")
    return config, problems


def _read(path: Path) -> tuple[KioskConfig, list[str]]:
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        return KioskConfig(), ["file not found; using the defaults"]
    except OSError as exc:
        return KioskConfig(), [f"cannot read it ({exc.strerror or exc}); using the defaults"]
    if len(raw) > MAX_CONFIG_BYTES:
        return KioskConfig(), [f"larger than {MAX_CONFIG_BYTES // 1024} KB, not a config file; using the defaults"]
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return KioskConfig(), ["not UTF-8 text; using the defaults"]
    except tomllib.TOMLDecodeError as exc:
        return KioskConfig(), [f"not valid TOML ({exc}); using the defaults"]
    except RecursionError:  # tomllib reads nested arrays and tables recursively (issue 15)
        return KioskConfig(), ["nested too deep to be a config file; using the defaults"]
    except ValueError as exc:  # tomllib lets int() refuse a number of more than 4300 digits
        return KioskConfig(), [f"not valid TOML ({str(exc)[:120]}); using the defaults"]
    return parse_config(data)


def _show(value: Any) -> str:
    """A setting as it would be written in the TOML file."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if value is None:
        return '""'
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def describe(config: KioskConfig) -> list[str]:
    """The settings in effect, one ``key = value`` line each, as TOML (the PIN is masked)."""
    lines = []
    for f in fields(KioskConfig):
        value = getattr(config, f.name)
        shown = ('"' + "*" * len(value) + '"') if f.name == "admin_pin" and value else _show(value)
        lines.append(f"{f.name} = {shown}")
    return lines


def check_main(path: Path | None) -> int:
    """``mine-duel --kiosk-check [--kiosk-config PATH]``: print the settings in effect; 1 when something was wrong."""
    logging.getLogger(__name__).setLevel(logging.ERROR)  # the problems are printed below, not logged twice
    config, problems = load_config(path)
    where = path if path is not None else next((p for p in default_config_paths() if p.is_file()), None)
    print(f"# kiosk config: {where if where is not None else 'none found, defaults'}")
    for problem in problems:
        print(f"# PROBLEM: {problem}")
    for line in describe(config):
        print(line)
    return 1 if problems else 0


# ----- records --------------------------------------------------------------------------------------------------


class NullRecordStore(RecordStore):
    """A kiosk without ``record_folder``: finished matches are not kept, and nothing is written."""

    def __init__(self) -> None:
        super().__init__(Path(os.devnull), Path(os.devnull))

    def save(self, stem: str, text: str) -> WriteResult:
        return WriteResult(None)

    def export(self, stem: str, text: str, folder: Path | None = None) -> WriteResult:
        return WriteResult(None)


def record_store(config: KioskConfig) -> RecordStore:
    """Where a kiosk keeps finished CPU matches: the configured folder, or nowhere."""
    if config.record_folder is None:
        return NullRecordStore()
    return RecordStore(config.record_folder, config.record_folder)


def prepare_sdl(environ: dict[str, str] | os._Environ[str] = os.environ) -> None:
    """Set :data:`SDL_HINTS` (those the operator has not set) before pygame's display starts."""
    for name, value in SDL_HINTS.items():
        environ.setdefault(name, value)


def open_window(config: KioskConfig, size: tuple[int, int] | None) -> pygame.Surface:
    """Full screen on the configured monitor at its desktop size; with ``size``, a borderless window of
    that size instead (testing, or a kiosk sharing a screen)."""
    count = pygame.display.get_num_displays()
    display = config.display
    if display >= count:
        log.warning("kiosk: display %d does not exist (%d found); using display 0", display, count)
        display = 0
    if size is not None:
        return pygame.display.set_mode(size, pygame.NOFRAME, display=display)
    return pygame.display.set_mode((0, 0), pygame.FULLSCREEN, display=display)


# ----- the running policy -----------------------------------------------------------------------------------------

_POINTER_DOWN = {pygame.MOUSEBUTTONDOWN, pygame.FINGERDOWN}
_POINTER_UP = {pygame.MOUSEBUTTONUP, pygame.FINGERUP}
_INPUT = {pygame.KEYDOWN, pygame.KEYUP, pygame.TEXTINPUT, pygame.MOUSEMOTION, pygame.MOUSEWHEEL, pygame.FINGERMOTION,
          *_POINTER_DOWN, *_POINTER_UP}
_CLOSE = {pygame.QUIT, pygame.WINDOWCLOSE}
_DIGITS = {**{getattr(pygame, f"K_{d}"): str(d) for d in range(10)}, **{getattr(pygame, f"K_KP{d}"): str(d) for d in range(10)}}


@dataclass(eq=False)
class Kiosk:
    """What the app asks about each raw event (:meth:`filter`) and each frame (:meth:`update`, :meth:`draw`).

    ``new_player`` puts the app back to its start screen; ``quit`` ends the app (only the admin chord calls it).
    """

    config: KioskConfig
    ctx: Context
    new_player: Callable[[], None]
    quit: Callable[[], None]
    last_input: float = field(init=False)
    fresh: bool = field(default=True, init=False)  # nothing happened since the start screen was shown
    held_since: float | None = field(default=None, init=False)  # the admin chord went down
    pin: str | None = field(default=None, init=False)  # the PIN typed so far, while the prompt is open
    pin_deadline: float = field(default=0.0, init=False)
    warning: bool = field(default=False, init=False)  # "Still playing?" is shown
    resets: int = field(default=0, init=False)  # how many times idle time brought back the start screen
    ignored_closes: int = field(default=0, init=False)
    _swallow_up: bool = field(default=False, init=False)
    _shown: tuple[Any, ...] = field(default=(), init=False)
    attract: AttractScene | None = field(default=None, init=False)  # attract mode, while it shows
    attracts: int = field(default=0, init=False)  # how many times attract mode started

    def __post_init__(self) -> None:
        self.last_input = self.ctx.clock()

    # ----- events ----------------------------------------------------------------------------------------------
    def filter(self, event: pygame.event.Event, now: float) -> bool:
        """True when the kiosk used ``event`` and the app must not handle it."""
        etype = event.type
        if etype in _CLOSE:
            if etype == pygame.QUIT:
                self.ignored_closes += 1
                log.info("kiosk: a close request was ignored (quit with the admin chord %s)", self.config.admin_chord)
            return True
        if etype == pygame.WINDOWFOCUSLOST and self.held_since is not None:
            self._end_hold()
            return False
        if etype not in _INPUT:
            return False
        self.last_input = now
        self.fresh = False
        if self.pin is not None:
            self._pin_event(event)
            return True
        chord = self.config.admin_chord
        if etype == pygame.KEYDOWN and chord.pressed(event.key, event.mod):
            if self.held_since is None:
                self.held_since = now
                self.ctx.invalidate(None)
            return True
        if self.attract is not None:  # any touch or key ends attract mode, and does nothing else
            self._swallow_up = etype in _POINTER_DOWN
            self.stop_attract()
            return True
        if etype == pygame.KEYUP and self.held_since is not None and chord.released(event.key):
            self._end_hold()
        if self.warning:
            self.warning = False
            self.ctx.invalidate(None)
            self._swallow_up = etype in _POINTER_DOWN
            return True  # the touch that keeps the game does nothing else
        if self._swallow_up:
            if etype in _POINTER_UP:
                self._swallow_up = False
            return etype not in (pygame.KEYDOWN, pygame.KEYUP, pygame.TEXTINPUT)
        return False

    def _end_hold(self) -> None:
        self.held_since = None
        self.ctx.invalidate(None)

    def _pin_event(self, event: pygame.event.Event) -> None:
        if event.type != pygame.KEYDOWN or self.pin is None:
            return
        if event.key in _DIGITS and len(self.pin) < PIN_LENGTHS[1]:
            self.pin += _DIGITS[event.key]
        elif event.key == pygame.K_BACKSPACE:
            self.pin = self.pin[:-1]
        elif event.key in (pygame.K_RETURN, pygame.K_KP_ENTER):
            if hmac.compare_digest(self.pin.encode(), self.config.admin_pin.encode()):
                log.warning("kiosk: admin chord and PIN: quitting")
                self.pin = None
                self.quit()
            else:
                log.warning("kiosk: wrong admin PIN")
                self.pin = None
        elif event.key == pygame.K_ESCAPE:
            self.pin = None
        self.ctx.invalidate(None)

    # ----- time ------------------------------------------------------------------------------------------------------
    def update(self, now: float) -> None:
        """Admin hold complete → PIN prompt or quit; idle too long → warning, then a new player."""
        config = self.config
        if self.held_since is not None and now - self.held_since >= config.admin_hold_seconds:
            self.held_since = None
            if config.admin_pin:
                self.pin = ""
                self.pin_deadline = now + PIN_TIMEOUT
            else:
                log.warning("kiosk: admin chord held: quitting")
                self.quit()
            self.ctx.invalidate(None)
        if self.pin is not None and now >= self.pin_deadline:
            self.pin = None
            self.ctx.invalidate(None)
        if (config.attract_server and self.attract is None and self.fresh and self.pin is None and self.held_since is None
                and now - self.last_input >= config.attract_idle_seconds):
            self.start_attract()
        if config.idle_seconds and not self.fresh and self.pin is None and self.held_since is None:
            quiet = now - self.last_input
            if quiet >= config.idle_seconds:
                self.reset(f"no input for {config.idle_seconds:g} s")
            elif config.idle_warning_seconds and quiet >= config.idle_seconds - config.idle_warning_seconds:
                self.warning = True
        shown = self._overlay_state(now)
        if shown != self._shown:
            self._shown = shown
            self.ctx.invalidate(None)

    def reset(self, why: str) -> None:
        """Forget the player: the start screen again (the language picker)."""
        log.info("kiosk: %s: back to the start screen", why)
        self.warning = False
        self._swallow_up = False
        self.new_player()
        self.fresh = True
        self.resets += 1

    # ----- attract mode (issue 19) ------------------------------------------------------------------------------
    def start_attract(self) -> None:
        """Show the configured server's live matches over the start screen (its popup is closed: the
        touch that ends attract mode brings back a fresh start screen)."""
        target = self.config.attract_target()
        services_of = self.ctx.online_services
        if target is None or services_of is None:
            return
        from mineduel.client.scenes.spectate_attract import AttractLoop, AttractScene

        try:
            services = services_of()
        except Exception:  # no network services: no attract mode, the start screen stays
            log.exception("kiosk: attract mode needs the network services")
            self.last_input = self.ctx.clock()
            return
        config = self.config
        loop: AttractLoop = AttractLoop(target, lambda: services.connect, self.ctx.clock, services.client_name,
                                        rotate=config.attract_rotate_seconds, retry=config.attract_retry_seconds)
        log.info("kiosk: attract mode: the live matches of %s", target.label)
        self.ctx.stack.close_popup()
        self.attract = AttractScene(self.ctx, loop)
        self.ctx.stack.push(self.attract)
        self.attracts += 1

    def stop_attract(self) -> None:
        """End attract mode: a fresh start screen (the language picker) for the player who touched."""
        scene, self.attract = self.attract, None
        if scene is None:
            return
        log.info("kiosk: attract mode ended by a touch")
        self.new_player()  # replaces every scene: the attract scene leaves and closes its connections
        self.fresh = False  # the one who touched is here: idle time counts from their touch

    def seconds_left(self, now: float) -> int:
        return max(0, math.ceil(self.config.idle_seconds - (now - self.last_input)))

    def _overlay_state(self, now: float) -> tuple[Any, ...]:
        hold = None if self.held_since is None else min(10, int((now - self.held_since) / self.config.admin_hold_seconds * 10))
        return (self.warning and self.seconds_left(now), hold, self.pin)

    @property
    def overlay_visible(self) -> bool:
        """Something of the kiosk's own is drawn over the screen (the app then redraws whole frames)."""
        return self.warning or self.held_since is not None or self.pin is not None

    # ----- drawing ---------------------------------------------------------------------------------------------------
    def draw(self, canvas: pygame.Surface) -> None:
        """The kiosk's overlays on the finished canvas: hold progress, PIN prompt, idle countdown."""
        now = self.ctx.clock()
        if self.held_since is not None:
            share = min(1.0, (now - self.held_since) / self.config.admin_hold_seconds)
            width = canvas.get_width()
            pygame.draw.rect(canvas, palette.CARD_RAISED, (0, 0, width, 6))
            pygame.draw.rect(canvas, palette.PRIMARY, (0, 0, round(width * share), 6))
        if self.pin is not None:
            self._draw_pin(canvas)
        elif self.warning:
            self._draw_warning(canvas, now)

    def _card(self, canvas: pygame.Surface, height: int) -> pygame.Rect:
        w, h = self.ctx.size
        canvas.blit(shapes.scrim((w, h), palette.SCRIM), (0, 0))
        card = pygame.Rect(0, 0, 330, height)
        card.center = (w // 2, h // 2)
        canvas.blit(shapes.shadow(card.size, 22, palette.SHADOW, 70, 18), (card.x - 18, card.y - 12))
        canvas.blit(shapes.rounded(card.size, 22, palette.CARD), card)
        return card

    def _draw_warning(self, canvas: pygame.Surface, now: float) -> None:
        ctx = self.ctx
        fonts = ctx.fonts
        body = ctx.t("kiosk.idle_body", seconds=self.seconds_left(now))
        inner = 330 - 44
        body_h = paragraph_height(fonts, body, 16, inner)
        card = self._card(canvas, 22 + 40 + 12 + 34 + 10 + body_h + 22 + 10 + 22)
        y = card.top + 22
        icon = shapes.icon("restart", 40, palette.PRIMARY)
        canvas.blit(icon, icon.get_rect(midtop=(card.centerx, y)))
        y += 40 + 12
        blit_text(canvas, fonts, ctx.t("kiosk.idle_title"), 24, palette.INK, bold=True, center=(card.centerx, y + 15))
        y += 34 + 10
        body_rect = pygame.Rect(card.left + 22, y, inner, body_h + 4)
        blit_paragraph(canvas, fonts, body, 16, palette.INK_SOFT, body_rect, align="center")
        y += body_h + 22
        # The time left as a draining bar.
        share = max(0.0, min(1.0, (self.config.idle_seconds - (now - self.last_input)) / self.config.idle_warning_seconds))
        track = pygame.Rect(card.left + 22, y, inner, 10)
        canvas.blit(shapes.rounded(track.size, 5, palette.CARD_RAISED), track)
        if share > 0:
            canvas.blit(shapes.rounded((max(10, round(inner * share)), 10), 5, palette.PRIMARY), track.topleft)

    def _draw_pin(self, canvas: pygame.Surface) -> None:
        ctx = self.ctx
        fonts = ctx.fonts
        card = self._card(canvas, 210)
        blit_text(canvas, fonts, ctx.t("kiosk.admin_title"), 24, palette.INK, bold=True, center=(card.centerx, card.top + 38))
        blit_text(canvas, fonts, ctx.t("kiosk.admin_prompt"), 15, palette.INK_SOFT, center=(card.centerx, card.top + 74))
        typed = len(self.pin or "")
        slots = max(PIN_LENGTHS[0], typed)  # never hints at the PIN's length
        x = card.centerx - (slots * 26 - 10) // 2
        for i in range(slots):
            color = palette.PRIMARY if i < typed else palette.CARD_RAISED
            canvas.blit(shapes.circle(16, color), (x + i * 26, card.top + 118))
        blit_text(canvas, fonts, ctx.t("kiosk.admin_timeout", seconds=round(PIN_TIMEOUT)), 13, palette.INK_FAINT,
                  center=(card.centerx, card.top + 172))
