"""The game's entry point (``mine-duel``) and the app object that runs a frame.

:class:`App` owns the window, the scene stack and the context; :meth:`App.frame` runs one frame
(events → update → draw only what changed) and says how long the app may sleep before the next
one. :func:`main` drives ``frame`` from Twisted's reactor with one ``task.LoopingCall`` — one
thread, so the online mode can share the reactor later. Only this module and the networking
module import Twisted (STYLE.md), and only inside :func:`main`.

Sleeping, not spinning: after input or while something animates the loop runs at 60 fps; when
nothing happens it polls for input :data:`IDLE_POLL` times a second and draws nothing (or sooner,
when a CPU step or an animation step is due), and a minimised or hidden window is polled slower.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import pygame

from mineduel.client.cpu_match import CpuMatch
from mineduel.client.cpu_session import CpuSession
from mineduel.client.desktop import window_icon
from mineduel.client.display import LOGICAL_SIZE, Viewport
from mineduel.client.i18n import DEFAULT_LANGUAGE, LANGUAGES, Translator
from mineduel.client.online_client import OnlineClient, OnlineServices
from mineduel.client.records import RecordStore
from mineduel.client.scenes.base import Context, SceneStack
from mineduel.client.scenes.game import GameScene
from mineduel.client.scenes.problem import ProblemScene, ReconnectTo, reconnect_target
from mineduel.client.settings import RunLanguageStore, SettingsStore
from mineduel.client.sound import MixerSounds
from mineduel.client.ui.input import KeyEvent, PointerEvent, PointerKind, WheelEvent, translate
from mineduel.client.ui.text import FontBook
from mineduel.shared.version import VERSION  # the one release number (shared/version.py)

if TYPE_CHECKING:
    from mineduel.client.kiosk import Kiosk, KioskConfig

log = logging.getLogger(__name__)

ACTIVE_INTERVAL = 1 / 60
IDLE_POLL = 1 / 20  # seconds between input polls when nothing happens
AWAY_POLL = 1 / 4  # minimised or hidden
ACTIVE_AFTER_INPUT = 0.5  # keep 60 fps this long after the last input (hover, drags)
DRAG_SLOP = 10  # window pixels a finger moves before a press becomes a scroll

_AWAY_EVENTS = {
    pygame.WINDOWMINIMIZED: ("minimised", True),
    pygame.WINDOWRESTORED: ("minimised", False),
    pygame.WINDOWMAXIMIZED: ("minimised", False),
    pygame.WINDOWHIDDEN: ("hidden", True),
    pygame.WINDOWSHOWN: ("hidden", False),
    pygame.WINDOWFOCUSLOST: ("unfocused", True),
    pygame.WINDOWFOCUSGAINED: ("unfocused", False),
}


@dataclass(slots=True)
class _Drag:
    """A finger on a window too small for the canvas: where it started, where it was last."""

    start: float
    last: float
    scrolling: bool = False


def parse_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT, e.g. 390x844, not {text!r}") from None
    if w < 100 or h < 100:
        raise argparse.ArgumentTypeError("the window must be at least 100x100")
    return w, h


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mine-duel", description="MINE DUEL: two-player competitive Minesweeper.")
    parser.add_argument("--size", type=parse_size, default=None, metavar="WxH",
                        help="window size in pixels (default: 390x844, shrunk to fit the screen); resizable")
    parser.add_argument("--lang", choices=LANGUAGES, default=None, help="language for this run (skips the picker)")
    parser.add_argument("--seed", type=int, default=None, help="CPU random seed, to replay a match exactly (R4)")
    parser.add_argument("--profile-dir", type=Path, default=None,
                        help="keep settings and records in this folder instead of the user's config/data folders")
    parser.add_argument("-v", "--verbose", action="store_true", help="log more")
    parser.add_argument("--join", metavar="LINK", default=None,
                        help="open the online screen on an invite link (mineduel://HOST:PORT/join/CODE, "
                             "or mineduels:// over TLS); nobody is seated until Join")
    parser.add_argument("--watch", metavar="LINK", default=None,
                        help="watch the match of an invite link's room as a spectator (issue 19)")
    parser.add_argument("--replay-view", type=Path, default=None, metavar="FILE",
                        help="open a match record (docs/RECORD.md) in the viewer")
    parser.add_argument("--kiosk", action="store_true",
                        help="kiosk mode: full screen, touch-first, players cannot quit, "
                             "back to the start after idle time (docs/KIOSK.md)")
    parser.add_argument("--kiosk-config", type=Path, default=None, metavar="PATH",
                        help="the kiosk settings file (implies --kiosk; default: /etc/mine-duel/kiosk.toml, "
                             "then kiosk.toml in the system config folder)")
    parser.add_argument("--kiosk-check", action="store_true",
                        help="print the kiosk settings in effect and any problems in the file, then exit (1: problems)")
    return parser


def default_window_size() -> tuple[int, int]:
    """390×844, shrunk (keeping the aspect) to fit the desktop with room for window decorations."""
    try:
        sizes = pygame.display.get_desktop_sizes()
    except pygame.error:
        sizes = []
    w, h = LOGICAL_SIZE
    if sizes:
        dw, dh = sizes[0]
        scale = min(1.0, (dh - 80) / h, (dw - 40) / w)
        if scale > 0.3:
            return round(w * scale), round(h * scale)
    return w, h


class App:
    """The client: window, context, scenes; :meth:`frame` runs one frame."""

    def __init__(
        self,
        *,
        size: tuple[int, int] | None = None,
        language: str | None = None,
        seed: int | None = None,
        profile_dir: Path | None = None,
        config_dir: Path | None = None,
        data_dir: Path | None = None,
        export_dir: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        window_flags: int = pygame.RESIZABLE,
        join: str | None = None,
        online_services: Callable[[], OnlineServices] | None = None,
        kiosk: KioskConfig | None = None,
        replay_view: Path | None = None,
        watch: str | None = None,
    ) -> None:
        if kiosk is not None:
            from mineduel.client import kiosk as kiosk_mode

            kiosk_mode.prepare_sdl()
        pygame.display.init()
        pygame.font.init()
        pygame.display.set_caption("MINE DUEL")
        pygame.display.set_icon(window_icon())  # assets/icons (scripts/make_icon.py), else the bare mine
        if kiosk is None:
            window = pygame.display.set_mode(size or default_window_size(), window_flags)
        else:
            window = kiosk_mode.open_window(kiosk, size)
            pygame.mouse.set_visible(kiosk.show_cursor)
        self.viewport = Viewport(window)
        self.clock = clock
        if profile_dir is not None:
            config_dir = config_dir or profile_dir
            data_dir = data_dir or profile_dir
        store = SettingsStore(config_dir)
        if kiosk is not None:
            # Every player starts at the language picker; nothing is read from or written to settings.json.
            settings = kiosk.player_settings()
            if language is not None or join is not None or watch is not None:
                log.warning("kiosk: --lang, --join and --watch are ignored (languages come from the kiosk config)")
                language = join = watch = None
        else:
            settings = store.load()
            if language is not None and settings.language is None:
                # --lang stands in for the first-run picker (U1) and is saved like its choice (U5), so that
                # a relaunch without it (say, to resume a running online match, O12) keeps the language.
                settings = replace(settings, language=language)
                store.save(settings)
            elif language is not None and settings.language != language:
                store = RunLanguageStore(config_dir, language, settings.language)  # for this run only
        if language is not None:
            settings = replace(settings, language=language)  # chosen on the command line for this run
        self.translator = Translator(settings.language or (kiosk.default_language if kiosk is not None else DEFAULT_LANGUAGE))
        self._dirty: list[pygame.Rect] = []
        self._full = True
        self._running = True
        self._last_input = -1e9
        self._last_frame = clock()
        self._drag: _Drag | None = None
        self.frames_drawn = 0
        self.last_areas: list[pygame.Rect] | None = None  # what the last drawn frame repainted (None: all)
        records = RecordStore(None if data_dir is None else Path(data_dir) / "records", export_dir)
        self._data_dir = None if data_dir is None else Path(data_dir)
        self._kiosk_config = kiosk
        if kiosk is not None:
            import tempfile

            records = kiosk_mode.record_store(kiosk)
            # Online sessions and a hosted server's database live only as long as this run.
            self._data_dir = Path(tempfile.mkdtemp(prefix="mine-duel-kiosk-"))
        self._online: OnlineServices | None = None
        self._online_factory = online_services
        self.online_session: OnlineClient | None = None  # the online session the frame loop pumps
        self.ctx = Context(
            clock=clock,
            tr=self.translator,
            fonts=FontBook(),
            settings_store=store,
            settings=settings,
            records=records,
            invalidate=self.invalidate,
            new_cpu_match=lambda *, difficulty, seed: CpuMatch(
                difficulty=difficulty, seed=seed, clock=clock, wall_clock=wall_clock, client_version=VERSION,
            ),
            quit=self.quit,
            ensure_visible=self._ensure_visible,
            visible=self._visible_area,
            online_services=self.online_services,
            open_session=self.open_session,
        )
        if kiosk is None or kiosk.sound:  # docs/CLIENT.md "Sound": silent where there is no audio device
            self.ctx.sounds = MixerSounds(lambda: self.ctx.settings, clock)
        if kiosk is not None:
            self.ctx.quit = lambda: log.info("kiosk: quitting is not offered to players")
            self.ctx.allowed = kiosk.allowed()
            self.ctx.languages = kiosk.languages
        self.kiosk: Kiosk | None = None if kiosk is None else kiosk_mode.Kiosk(kiosk, self.ctx, self.new_player, self.quit)
        self.stack = SceneStack(self.ctx)
        self.session = CpuSession(self.ctx, seed, **({} if kiosk is None else {"default_difficulty": kiosk.difficulty}))
        self.game = GameScene(self.ctx, self.session)
        self.viewport.align_tiles(self.game.board.origin)
        from mineduel.client.scenes.online import OnlineScene, pending_resume

        resume = None if join is not None or kiosk is not None else pending_resume(self._data_dir)
        if replay_view is not None and kiosk is None:  # issue 19: `mine-duel replay-view FILE`; Back: the game
            from mineduel.client.scenes.replay_viewer import open_file

            open_file(self.ctx, replay_view, on_back=lambda: self.stack.replace(self.game))
        elif watch is not None:  # issue 19: `mine-duel --watch LINK`; Leave: the online screen
            self.stack.push(OnlineScene(self.ctx, watch=watch, on_play_cpu=lambda: self.stack.replace(self.game)))
        elif join is not None or resume is not None:
            # An invite link, or a match that was running when the client stopped (O12): the online
            # screen comes first, without the CPU mode's start popups.
            self.stack.push(OnlineScene(self.ctx, join=join, resume=resume, on_play_cpu=lambda: self.stack.replace(self.game)))
        else:
            self.stack.push(self.game)

    def online_services(self) -> OnlineServices:
        """The online screens' network services (client/net.py on the running reactor), made on first use."""
        if self._online is None:
            if self._online_factory is not None:
                self._online = self._online_factory()
            else:
                from twisted.internet import reactor

                from mineduel.client.clipboard import copy_text
                from mineduel.client.net import make_services
                from mineduel.client.settings import default_data_dir

                self._online = make_services(reactor, self._data_dir or default_data_dir(), client_name=f"mine-duel/{VERSION}",
                                             clipboard=copy_text)
            if self._kiosk_config is not None and self._online.keys is not None:  # issue 20: one identity per visitor
                self._online.keys.memory = True
        return self._online

    def open_session(self, services: OnlineServices) -> OnlineClient:
        """A fresh online session (the last one is closed); the frame loop pumps it from now on."""
        if self.online_session is not None:
            self.online_session.close()
        self.online_session = OnlineClient(services, self.clock)
        return self.online_session

    def new_player(self) -> None:
        """Kiosk: forget the last player (match, popups, online session, language) and show the start screen."""
        config = self._kiosk_config
        assert config is not None
        ctx = self.ctx
        self.stack.close_popup()
        self.game.detach()  # a finished match's record was saved when it ended; an unfinished one is dropped
        online = self._online
        if online is not None:
            if online.host is not None:
                online.host.stop()  # a server the last player started on this machine
                online.host = None
            online.tokens.clear()  # nobody may return to the last player's room
            if online.keys is not None:
                online.keys.forget()  # issue 20: the next player is a new player (player_key.py)
        ctx.settings = config.player_settings()
        self.translator.set_language(config.default_language)
        ctx.keyboard = False
        self.session = CpuSession(ctx, self.session.next_seed, default_difficulty=config.difficulty)
        self.game = GameScene(ctx, self.session)
        self.stack.replace(self.game)  # leaving the online screens closes their connections
        self.viewport.scroll = 0
        self._drag = None
        self._full = True

    # ----- services for scenes ---------------------------------------------------------------------------
    def invalidate(self, rect: pygame.Rect | None = None) -> None:
        if rect is None:
            self._full = True
        elif not self._full:
            self._dirty.append(pygame.Rect(rect))

    def quit(self) -> None:
        self._running = False

    @property
    def running(self) -> bool:
        return self._running

    def _visible_area(self) -> pygame.Rect:
        """The part of the canvas the window shows (popups fit themselves into it)."""
        m = self.viewport.mapping
        top = (self.viewport.scroll - m.offset[1]) / m.scale
        shown = pygame.Rect(0, round(max(0.0, top)), LOGICAL_SIZE[0], round(m.window[1] / m.scale))
        return shown.clip(pygame.Rect((0, 0), LOGICAL_SIZE))

    def _ensure_visible(self, rect: pygame.Rect) -> None:
        if self.viewport.ensure_visible(rect):
            self._full = True

    # ----- the frame ---------------------------------------------------------------------------------------
    def frame(self) -> float | None:
        """Run one frame; the seconds until the next one is wanted, or ``None`` to quit.

        Nothing escapes it: an exception from a scene, an input handler or the online session is
        logged with its traceback and becomes the problem screen (:meth:`show_problem`); one from
        the problem screen itself ends the app cleanly (its connections closed) rather than leave
        a window that draws nothing and answers nobody.
        """
        now = self.clock()
        self._last_frame = now
        try:
            return self._frame(now)
        except Exception:
            if isinstance(self.stack.top, ProblemScene):
                log.exception("the problem screen failed too; closing the game")
                self._running = False
                return None
            log.exception("a frame failed; showing the problem screen")
            self.show_problem()
            return ACTIVE_INTERVAL

    def _frame(self, now: float) -> float | None:
        for event in pygame.event.get():
            self.handle_event(event, now)
        if self.kiosk is not None:
            self.kiosk.update(now)
        if not self._running:
            return None
        if self.online_session is not None:
            self.online_session.update()  # what arrived since the last frame; scenes read its snapshot
        self.stack.update(now)
        if self._full or self._dirty:
            self.render()
        return self.next_interval(now)

    # ----- when a frame fails (issue 15) ---------------------------------------------------------------
    def show_problem(self) -> None:
        """Close the online connection (the server counts the seat as dropped, O12: nothing answers
        its pings from here on), drop every scene, and show the problem screen with Reconnect (when
        there was a server) and Back."""
        session = self.online_session
        target = reconnect_target(session)
        self.online_session = None
        if session is not None:
            try:
                session.close()
            except Exception:
                log.exception("closing the online session failed")
        self.stack.abandon()
        reconnect = None if target is None else partial(self._reconnect, target)
        self.stack.push(ProblemScene(self.ctx, online=target is not None, on_back=self.back_to_cpu, on_reconnect=reconnect))
        self.viewport.scroll = 0
        self._drag = None
        self._full = True

    def back_to_cpu(self) -> None:
        """A fresh CPU game with its start popups (the problem screen's Back)."""
        self.session = CpuSession(self.ctx, self.session.next_seed, **self._cpu_options())
        self.game = GameScene(self.ctx, self.session)
        self.stack.replace(self.game)

    def _cpu_options(self) -> dict[str, str]:
        return {} if self._kiosk_config is None else {"default_difficulty": self._kiosk_config.difficulty}

    def _reconnect(self, target: ReconnectTo) -> None:
        """The problem screen's Reconnect: the online screen again, resuming the seat (or the server)."""
        from mineduel.client.scenes.online import OnlineScene

        scene = OnlineScene(self.ctx, resume=target.saved, on_play_cpu=self.back_to_cpu)  # as at start (--join)
        self.stack.replace(scene)
        if target.saved is None and scene.client is not None:
            scene.connect_to(target.host, target.port, tls=target.tls, pin=target.pin)

    def next_interval(self, now: float) -> float:
        if self.stack.away:
            return AWAY_POLL
        if now - self._last_input < ACTIVE_AFTER_INPUT:
            return ACTIVE_INTERVAL
        scene_wake = self.stack.next_wakeup(now)
        online_wake = None if self.online_session is None else self.online_session.next_wakeup()
        wakes = [w for w in (scene_wake, online_wake) if w is not None]
        wake = min(wakes) if wakes else None
        if wake is None:
            return IDLE_POLL
        return min(IDLE_POLL, max(ACTIVE_INTERVAL, wake - now))

    def render(self) -> None:
        canvas = self.viewport.canvas
        full = pygame.Rect((0, 0), LOGICAL_SIZE)
        overlay = self.kiosk is not None and self.kiosk.overlay_visible
        if self._full or overlay:
            areas = None
            self.stack.draw(canvas, full)
            if overlay:
                self.kiosk.draw(canvas)  # type: ignore[union-attr]
        else:
            areas = _merge(self._dirty)
            for area in areas:
                self.stack.draw(canvas, area)
        self._full = False
        self._dirty = []
        self.last_areas = areas
        rects = self.viewport.present(areas)
        if areas is None:
            pygame.display.flip()
        else:
            pygame.display.update(rects)
        self.frames_drawn += 1

    def handle_event(self, event: pygame.event.Event, now: float) -> None:
        etype = event.type
        if self.kiosk is not None and self.kiosk.filter(event, now):
            return
        if etype == pygame.QUIT:
            self._running = False
            return
        if etype in _AWAY_EVENTS:
            reason, away = _AWAY_EVENTS[etype]
            self.stack.set_attention(reason, away)
            if not away:
                self._full = True
            if etype == pygame.WINDOWRESTORED:
                self.stack.set_attention("hidden", False)
            return
        if etype in (pygame.VIDEORESIZE, pygame.WINDOWSIZECHANGED, pygame.WINDOWEXPOSED):
            surface = pygame.display.get_surface()
            if surface is not None and (etype != pygame.WINDOWEXPOSED or surface.get_size() != self.viewport.mapping.window):
                self.viewport.resize(surface)
            self._full = True
            return
        scene_event = translate(event, self.viewport.to_logical, self.viewport.mapping.window)
        if scene_event is None:
            return
        self._last_input = now
        if isinstance(scene_event, KeyEvent):
            if not self.ctx.keyboard:
                self.ctx.keyboard = True
                self._full = True
        elif isinstance(scene_event, PointerEvent) and scene_event.kind is not PointerKind.MOVE and self.ctx.keyboard:
            self.ctx.keyboard = False
            self._full = True
        if isinstance(scene_event, PointerEvent) and scene_event.touch and self._scroll_drag(event, scene_event):
            return
        consumed = self.stack.process_event(scene_event)
        if isinstance(scene_event, WheelEvent) and not consumed and self.viewport.scroll_by(-scene_event.dy * 64):
            self._full = True

    def _scroll_drag(self, event: pygame.event.Event, scene_event: PointerEvent) -> bool:
        """Touch drags scroll a window too small for the canvas; True when the event was used."""
        if not self.viewport.mapping.max_scroll or self.stack.popup is not None:
            return False  # an open popup scrolls itself (it fits in what the window shows)
        y = event.y * self.viewport.mapping.window[1]
        if scene_event.kind is PointerKind.DOWN:
            self._drag = _Drag(y, y)
            return False
        drag = self._drag
        if drag is None:
            return False
        if scene_event.kind is PointerKind.UP:
            self._drag = None
            return drag.scrolling
        if not drag.scrolling and abs(y - drag.start) > DRAG_SLOP:
            drag.scrolling = True
            self.stack.process_event(PointerEvent(PointerKind.CANCEL, scene_event.pos, touch=True))
        if drag.scrolling:
            if self.viewport.scroll_by(drag.last - y):
                self._full = True
            drag.last = y
            return True
        return False

    def screenshot(self) -> pygame.Surface:
        """The logical 390×844 canvas as it was last drawn."""
        return self.viewport.canvas_copy()

    def close(self) -> None:
        if self.game.controller is not None:
            self.game.controller.close()
        if self.online_session is not None:
            self.online_session.close()
        host = None if self._online is None else self._online.host
        if host is not None:
            host.stop()  # the server this client hosted: clients told, database closed
        if self._kiosk_config is not None and self._data_dir is not None:
            import shutil

            shutil.rmtree(self._data_dir, ignore_errors=True)
        self.ctx.sounds.close()
        pygame.display.quit()


def _merge(rects: list[pygame.Rect]) -> list[pygame.Rect]:
    """Overlapping dirty rectangles merged, so nothing is drawn twice."""
    out: list[pygame.Rect] = []
    for rect in rects:
        rect = pygame.Rect(rect)
        merged = True
        while merged:
            merged = False
            for i, other in enumerate(out):
                if rect.colliderect(other):
                    rect.union_ip(out.pop(i))
                    merged = True
                    break
        out.append(rect)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``mine-duel [--size WxH] [--lang CODE] [--seed N] [--profile-dir DIR] [--kiosk [--kiosk-config PATH]]``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) == 1 and argv[0].startswith(("mineduel://", "mineduels://")):
        argv = ["--join", argv[0]]  # opened as a link by the system
    args = build_parser().parse_args(argv)
    kiosk_mode = args.kiosk or args.kiosk_config is not None
    # A kiosk logs what it ignores and why it resets (for the operator's journal).
    logging.basicConfig(level=logging.INFO if args.verbose or kiosk_mode else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    kiosk = None
    if args.kiosk_check or kiosk_mode:
        from mineduel.client.kiosk import check_main, load_config

        if args.kiosk_check:
            return check_main(args.kiosk_config)
        kiosk, _ = load_config(args.kiosk_config)
    app = App(size=args.size, language=args.lang, seed=args.seed, profile_dir=args.profile_dir, join=args.join, kiosk=kiosk,
              replay_view=args.replay_view, watch=args.watch)
    app.frame()  # the first frame before Twisted loads
    app.ctx.sounds.available()  # open the audio device now, behind the first frame, not in the frame of the first cue

    from twisted.internet import reactor, task
    from twisted.python.failure import Failure

    from mineduel.server.client import install_steady_clock

    # Frames and a hosted server's deadlines must not freeze for an hour when the system
    # clock is set back (or all fall due when it is set forward): server/clock.py.
    install_steady_clock(reactor)

    def tick() -> None:
        delay = app.frame()
        if delay is None:
            loop.stop()
            reactor.stop()
        else:
            loop.interval = delay

    def stopped(failure: Failure) -> None:
        # App.frame lets nothing escape; should anything still stop the loop, the game ends (its
        # connections closed in the finally below) instead of leaving a window that answers pings.
        log.error("the frame loop stopped:\n%s", failure.getTraceback())
        if reactor.running:
            reactor.stop()

    loop = task.LoopingCall(tick)
    loop.start(ACTIVE_INTERVAL, now=False).addErrback(stopped)
    if kiosk is not None:
        # Logged once Twisted's SIGTERM handler is in place: from here on SIGTERM ends the client cleanly.
        reactor.callWhenRunning(log.info, "kiosk: running; hold %s for %g s to quit (or send SIGTERM)",
                                kiosk.admin_chord, kiosk.admin_hold_seconds)
    try:
        reactor.run()
    finally:
        app.close()
    return 0
