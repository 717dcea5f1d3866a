"""Sound (issue 16): the generated effects, the service that plays them, the match's cues, the kiosk keys.

* the committed WAVs are exactly what ``scripts/make_sounds.py`` makes, in the promised format;
* :class:`MixerSounds` on SDL's dummy audio driver: volume and mute read live from the settings,
  a rate limit per cue, silence (one log line) when the mixer cannot start or a file is missing
  or corrupt — never an exception;
* the match screen (the real app on the Driver, CPU matches) plays the cues the events call for;
* MatchCues' deadline ticks: once per whole second in the last five of my deadline (ONLINE, U6).
"""

from __future__ import annotations

import importlib.util
import logging
import wave
from array import array
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from types import ModuleType

import pygame
import pytest
from support.client_driver import Driver, play_to_the_end

from mineduel.client import sound as sound_mod
from mineduel.client.kiosk import KioskConfig, parse_config
from mineduel.client.screenshots import MID_GAME, late
from mineduel.client.settings import Settings
from mineduel.client.sound import CUES, MIN_GAP, MixerSounds, SilentSounds, Sounds, amplitude
from mineduel.client.sound_cues import END_DELAY, MatchCues

ROOT = Path(__file__).resolve().parents[2]
SOUNDS = ROOT / "assets" / "sounds"


def skip_tutorial(d: Driver) -> None:
    """A first launch may offer the tutorial before the rules popup (issue 16): decline it."""
    popup = d.app.stack.popup
    if popup is not None and any(b.name == "tutorial.skip" for b in popup.widgets.buttons):
        d.click_named("tutorial.skip")
        d.wait(0.3)


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_sounds", ROOT / "scripts" / "make_sounds.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def frames(data: bytes) -> array:
    pcm = array("h")
    pcm.frombytes(data)
    return pcm


# ----- the files ---------------------------------------------------------------------------------------------------


def test_committed_sounds_are_what_the_script_makes():
    """Reproducible: the script's output (fixed parameters, a fixed-seed noise source) is the committed bytes."""
    made = load_script().render_all()
    assert sorted(made) == sorted(CUES)
    assert sorted(p.stem for p in SOUNDS.glob("*.wav")) == sorted(CUES)
    for name, data in made.items():
        committed = (SOUNDS / f"{name}.wav").read_bytes()
        if committed != data:  # only a libm that rounds sin() differently may move a sample by one step
            assert committed[:44] == data[:44], name
            diff = max(abs(a - b) for a, b in zip(frames(committed[44:]), frames(data[44:]), strict=True))
            assert diff <= 1, f"{name}.wav differs from scripts/make_sounds.py's output: run it"


@pytest.mark.parametrize("cue", CUES)
def test_sound_format_length_and_fades(cue):
    """Mono 22,050 Hz 16-bit; under 0.5 s except win/loss (under 1.1 s); silent first and last
    samples (the fades) and a peak at the level the script sets (normalised)."""
    with wave.open(str(SOUNDS / f"{cue}.wav"), "rb") as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getcomptype()) == (1, 2, 22_050, "NONE")
        pcm = frames(w.readframes(w.getnframes()))
        seconds = w.getnframes() / w.getframerate()
    assert 0.02 < seconds < (1.1 if cue in ("win", "loss") else 0.5)
    assert pcm[0] == 0 and pcm[-1] == 0
    assert max(abs(v) for v in pcm[-5:]) < 200 and max(abs(v) for v in pcm[:3]) < 2000
    level = load_script().EFFECTS[cue][1]
    assert abs(max(abs(v) for v in pcm) - level * 32767) <= 1


def test_the_whole_set_is_small():
    total = sum(p.stat().st_size for p in SOUNDS.glob("*.wav"))
    assert total < 160_000, total  # 142,672 bytes when written


def test_script_check_mode_agrees(tmp_path, capsys):
    script = load_script()
    assert script.main(["--check"]) == 0
    assert script.main(["--out", str(tmp_path)]) == 0
    (tmp_path / "flag.wav").write_bytes(b"RIFF")
    assert script.main(["--check", "--out", str(tmp_path)]) == 1
    assert "flag.wav" in capsys.readouterr().out


# ----- the service -----------------------------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def mixer():
    """The mixer is stopped before and after each test (each MixerSounds starts it afresh)."""
    pygame.mixer.quit()
    yield
    pygame.mixer.quit()


def service(settings: list[Settings], clock: Clock, **kwargs) -> MixerSounds:
    return MixerSounds(lambda: settings[0], clock, **kwargs)


def test_plays_on_the_dummy_driver_at_the_settings_volume(mixer):
    """The mixer starts on the first cue; the volume is the settings' 0.7 squared."""
    settings, clock = [Settings()], Clock()
    s = service(settings, clock)
    assert pygame.mixer.get_init() is None or s.played == 0
    s.play("explore")
    assert pygame.mixer.get_init() is not None
    assert s.played == 1 and s.last_volume == pytest.approx(0.49)
    assert s.available()
    s.close()
    assert pygame.mixer.get_init() is None


def test_volume_and_mute_apply_live(mixer):
    settings, clock = [Settings(sound_volume=0.5)], Clock()
    s = service(settings, clock)
    s.play("flag")
    assert s.last_volume == pytest.approx(0.25)
    settings[0] = replace(settings[0], sound_muted=True)
    clock.now += 1
    s.play("flag")
    assert s.played == 1  # muted: nothing reaches the mixer
    settings[0] = replace(settings[0], sound_muted=False, sound_volume=1.0)
    clock.now += 1
    s.play("flag")
    assert s.played == 2 and s.last_volume == pytest.approx(1.0)
    settings[0] = replace(settings[0], sound_volume=0.0)
    clock.now += 1
    s.play("flag")
    assert s.played == 2  # volume 0 is silence too


def test_a_kiosk_master_level_scales_the_volume(mixer):
    s = service([Settings(sound_volume=1.0)], Clock(), master=0.5)
    s.play("plant")
    assert s.last_volume == pytest.approx(0.5)


def test_the_same_cue_is_rate_limited_and_others_are_not(mixer):
    clock = Clock()
    s = service([Settings()], clock)
    for _ in range(10):
        s.play("explore")  # a burst in one frame: one sound
    s.play("number_changed")
    assert s.played == 2
    clock.now += MIN_GAP / 2
    s.play("explore")
    assert s.played == 2
    clock.now += MIN_GAP
    s.play("explore")
    assert s.played == 3


def test_a_mixer_that_cannot_start_means_silence_and_one_log_line(monkeypatch, caplog, mixer):
    def fail(*args, **kwargs):
        raise pygame.error("no audio device")

    monkeypatch.setattr(pygame.mixer, "get_init", lambda: None)
    monkeypatch.setattr(pygame.mixer, "init", fail)
    clock = Clock()
    s = service([Settings()], clock)
    with caplog.at_level(logging.INFO, logger="mineduel.client.sound"):
        for cue in CUES * 3:
            clock.now += 1
            s.play(cue)
    assert s.played == 0 and not s.available()
    assert len([r for r in caplog.records if r.name == "mineduel.client.sound"]) == 1


@pytest.mark.parametrize("content", [None, b"", b"RIFF\x00\x00garbage" * 10], ids=["missing", "empty", "corrupt"])
def test_a_missing_or_corrupt_file_silences_that_cue_only(tmp_path, caplog, mixer, content):
    for cue in ("explore", "flag"):
        (tmp_path / f"{cue}.wav").write_bytes((SOUNDS / f"{cue}.wav").read_bytes())
    if content is not None:
        (tmp_path / "flag.wav").write_bytes(content)
    else:
        (tmp_path / "flag.wav").unlink()
    clock = Clock()
    s = service([Settings()], clock, folder=tmp_path)
    with caplog.at_level(logging.INFO, logger="mineduel.client.sound"):
        for _ in range(3):
            clock.now += 1
            s.play("flag")
            s.play("explore")
    assert s.played == 3  # explore each time, flag never
    warnings = [r for r in caplog.records if r.name == "mineduel.client.sound"]
    assert len(warnings) == 1 and "flag.wav" in warnings[0].getMessage()


def test_a_failing_play_never_raises(caplog, mixer):
    clock = Clock()
    s = service([Settings()], clock)
    s.play("explore")

    class Lost:
        def set_volume(self, volume):
            pass

        def play(self):
            raise pygame.error("device lost")

    s._sounds["explore"] = Lost()  # the device went away after the sound was loaded
    with caplog.at_level(logging.ERROR, logger="mineduel.client.sound"):
        for _ in range(5):
            clock.now += 1
            s.play("explore")
    assert len(caplog.records) == 1


def test_amplitude_is_squared_and_clamped():
    assert amplitude(0.5, False) == 0.25
    assert amplitude(2.0, False) == 1.0
    assert amplitude(-1, False) == 0.0
    assert amplitude(1.0, True) == 0.0


def test_the_context_default_is_silent(tmp_path):
    """Scenes built without an app (tests, tools) get a silent service that needs nothing."""
    s = SilentSounds()
    s.play("ko")
    assert not s.available()
    s.close()


# ----- the match's cues (the real app, CPU matches) ----------------------------------------------------------


class Recorder(Sounds):
    """Records every cue with the fake clock's time."""

    def __init__(self, clock) -> None:
        self.clock = clock
        self.cues: list[tuple[float, str]] = []

    def play(self, cue: str) -> None:
        self.cues.append((self.clock(), cue))

    def names(self) -> list[str]:
        return [c for _, c in self.cues]

    def available(self) -> bool:
        return True


@pytest.fixture
def driver(tmp_path):
    d = Driver(tmp_path, language="en")
    yield d
    d.close()


def record(d: Driver) -> Recorder:
    rec = Recorder(d.clock)
    d.app.ctx.sounds = rec
    return rec


def start_from(d: Driver, board: str, **kw) -> None:
    from mineduel.client.cpu_match import CpuMatch
    from mineduel.shared.rules.notation import from_ascii

    state = from_ascii(board, **kw)
    d.app.ctx.new_cpu_match = lambda **k: CpuMatch(clock=d.clock, wall_clock=lambda: 1_700_000_000.0, state=state, **k)
    skip_tutorial(d)
    d.click_named("start")
    d.wait(1.0)


def test_a_whole_cpu_match_sounds_as_it_goes(driver):
    """Every explore of mine pops, plants thunk, my turns announce themselves, the end is a KO then the
    loss (or the win) a moment later — the same sequence every time (fixed seed)."""
    rec = record(driver)
    skip_tutorial(driver)
    driver.click_named("start")
    driver.wait(0.3)
    play_to_the_end(driver)
    driver.wait(1.5)
    names = rec.names()
    assert names[0] == "explore"
    assert {"explore", "plant", "turn_start", "number_changed"} <= set(names)
    assert "refused" not in names and "deadline_tick" not in names  # nothing was refused; a CPU match has no deadline
    kind = driver.app.game.words.result_kind()
    end = {"win": ["win"], "loss": ["loss"]}.get(kind, [])
    if driver.app.game.ended.ko_cell is not None:
        assert names[-1 - len(end):] == ["ko", *end]
        ko_at = next(t for t, c in rec.cues if c == "ko")
        if end:
            assert rec.cues[-1][0] - ko_at == pytest.approx(END_DELAY, abs=0.06)
    # Deterministic: the same seed gives the same sounds.
    again = Driver(driver.app.ctx.settings_store.folder / "again", language="en")
    try:
        rec2 = record(again)
        skip_tutorial(again)
        again.click_named("start")
        again.wait(0.3)
        play_to_the_end(again)
        again.wait(1.5)
        assert rec2.names() == names
    finally:
        again.close()


def test_my_explore_onto_the_cpu_mine_is_explore_ko_then_loss(driver):
    rec = record(driver)
    start_from(driver, MID_GAME, turn=9)
    driver.click_cell(1 * 8 + 4)  # the CPU's mine (KO, C3)
    driver.wait(1.5)
    assert rec.names() == ["explore", "ko", "loss"]


def test_a_refused_move_and_a_touch_out_of_turn_buzz(driver):
    rec = record(driver)
    start_from(driver, MID_GAME)
    driver.click_cell(2 * 8 + 2)  # my own mine: refused (refusal.own_mine)
    assert rec.names() == ["refused"]
    driver.wait(0.2)
    driver.click_cell(0 * 8 + 3)  # a good explore
    assert rec.names()[-1] == "explore"


def test_flag_end_turn_and_the_cpu_turn(driver):
    """A flag snaps; ending the turn hands over; the CPU's moves sound too; my next turn announces itself."""
    rec = record(driver)
    start_from(driver, MID_GAME, phase="end_wait")
    driver.click_named("mode:flag")
    driver.click_cell(6 * 8 + 2)
    assert rec.names() == ["flag"]
    driver.click_named("end_turn")
    for _ in range(20):
        driver.frame(0.66)
        if "turn_start" in rec.names():
            break
    names = rec.names()
    assert names[1] == "explore"  # the CPU's explore
    assert "plant" in names and names[-1] in ("turn_start", "number_changed")
    assert "turn_start" in names


def test_the_win_after_the_cpu_steps_on_my_mine(driver):
    rec = record(driver)
    start_from(driver, late("A.", "A.", "B.", "B.", "A."), phase="end_wait", turn=15, marker_used=True)
    driver.click_named("end_turn")
    driver.wait(4.0, step=0.1)
    names = rec.names()
    assert names[-2:] == ["ko", "win"]


def test_mute_in_the_app_silences_the_real_mixer(driver, mixer):
    """The app's own MixerSounds (dummy audio driver) plays, and muting in the settings stops it."""
    sounds = driver.app.ctx.sounds
    assert isinstance(sounds, MixerSounds)
    start_from(driver, MID_GAME)
    driver.click_cell(0 * 8 + 3)
    assert sounds.played >= 1 and pygame.mixer.get_init() is not None
    played = sounds.played
    driver.app.ctx.save_settings(replace(driver.app.ctx.settings, sound_muted=True))
    driver.wait(3.0, step=0.1)
    driver.click_cell(0 * 8 + 4)
    assert sounds.played == played


# ----- deadline ticks (ONLINE, U6) ----------------------------------------------------------------------------------


class Ctx:
    def __init__(self) -> None:
        self.now = 0.0
        self.sounds = Recorder(lambda: self.now)
        self.clock = lambda: self.now


def test_deadline_ticks_once_per_second_in_the_last_five():
    ctx = Ctx()
    cues = MatchCues(ctx)  # type: ignore[arg-type]
    left = 12.0
    while left > -0.5:
        cues.deadline(left if left > 0 else 0.0, True)
        left -= 1 / 60
    assert ctx.sounds.names() == ["deadline_tick"] * 5


def test_no_tick_on_the_opponents_deadline_or_without_one():
    ctx = Ctx()
    cues = MatchCues(ctx)  # type: ignore[arg-type]
    for i in range(600):
        cues.deadline(10 - i / 60, False)
        cues.deadline(None, True)
    assert ctx.sounds.names() == []


def test_a_new_turn_ticks_again():
    ctx = Ctx()
    cues = MatchCues(ctx)  # type: ignore[arg-type]
    for seconds in (4.5, 3.5, 20.0, 4.9, 4.8, 3.9):
        cues.deadline(seconds, True)
    assert len(ctx.sounds.names()) == 4  # 5→4, 4, (new deadline) 5, 4


class FakeDeadline:
    """U6: seconds left until ``ends_at`` on the driver's fake clock (the server's deadline, online)."""

    def __init__(self, clock, ends_at: float) -> None:
        self.clock = clock
        self.ends_at = ends_at

    def seconds_left(self) -> float | None:
        return max(0.0, self.ends_at - self.clock())


def test_the_match_screen_ticks_in_my_last_five_seconds(driver):
    """A match offering a deadline (as ONLINE's does; the screen goes by capabilities only): the tick
    plays once per whole second of my last five, and not at all on the opponent's turn."""
    from mineduel.client.controller import Capabilities
    from mineduel.client.cpu_match import CpuMatch
    from mineduel.shared.rules.notation import from_ascii

    deadline = FakeDeadline(driver.clock, driver.clock() + 1000.0)

    class WithDeadline(CpuMatch):
        @property
        def capabilities(self) -> Capabilities:
            return Capabilities(deadline=deadline)

    state = from_ascii(MID_GAME, phase="end_wait", marker_used=True)
    driver.app.ctx.new_cpu_match = lambda **k: WithDeadline(clock=driver.clock, state=state, **k)
    rec = record(driver)
    skip_tutorial(driver)
    driver.click_named("start")
    driver.wait(0.5)
    deadline.ends_at = driver.clock() + 7.0
    driver.wait(8.0, step=0.05)
    assert rec.names().count("deadline_tick") == 5
    ticks = [t for t, c in rec.cues if c == "deadline_tick"]
    assert all(0.9 < b - a < 1.1 for a, b in pairwise(ticks))
    # The opponent's turn: its deadline makes no sound here.
    driver.click_named("end_turn")
    deadline.ends_at = driver.clock() + 4.0
    before = rec.names().count("deadline_tick")
    driver.wait(0.6, step=0.05)  # before the CPU's first step (650 ms)
    assert rec.names().count("deadline_tick") == before


# ----- kiosk keys -------------------------------------------------------------------------------------------------


def test_kiosk_sound_keys():
    config, problems = parse_config({"sound": False, "sound_volume": 0.25})
    assert problems == [] and config.sound is False and config.sound_volume == 0.25
    assert config.player_settings() == Settings(language=config.start_language, sound_volume=0.25)
    config, problems = parse_config({"sound": "yes", "sound_volume": 2})
    assert config.sound is True and config.sound_volume == KioskConfig().sound_volume
    assert len(problems) == 2


def test_a_kiosk_with_sound_off_is_silent_and_a_new_player_gets_the_kiosk_volume(tmp_path):
    d = Driver(tmp_path / "off", size=(1280, 800), kiosk=KioskConfig(sound=False))
    try:
        assert isinstance(d.app.ctx.sounds, SilentSounds)
    finally:
        d.close()
    d = Driver(tmp_path / "on", size=(1280, 800), kiosk=KioskConfig(sound_volume=0.3))
    try:
        assert isinstance(d.app.ctx.sounds, MixerSounds)
        assert d.app.ctx.settings.sound_volume == 0.3
        d.app.ctx.settings = replace(d.app.ctx.settings, sound_volume=1.0)
        d.app.new_player()
        assert d.app.ctx.settings.sound_volume == 0.3
    finally:
        d.close()


def test_sound_module_finds_the_shipped_folder():
    """The installed package's folder (the checkout's in an editable install, site-packages from the wheel:
    .ci/run), holding every committed effect byte for byte."""
    folder = sound_mod.sound_folder()
    assert sorted(p.name for p in folder.glob("*.wav")) == sorted(p.name for p in SOUNDS.glob("*.wav"))
    assert all((folder / p.name).read_bytes() == p.read_bytes() for p in SOUNDS.glob("*.wav"))


# ----- an online match (the in-process server) ------------------------------------------------------------------


def test_an_online_match_sounds_too(tmp_path):
    """The same cues online (the screen reads only events and views): the server's deadline ticks
    in my last five seconds, the server's automatic explore for me pops, and the opponent's
    resignation is my win."""
    from support.inprocess import InProcessServer

    from mineduel.client.online_client import OnlineServices
    from mineduel.client.scenes.game import GameScene
    from mineduel.client.scenes.online import OnlineScene
    from mineduel.client.tokens import TokenStore

    srv = InProcessServer()
    peer = srv.peer()
    code = peer.send(type="create_room", client_seed="peer-0")[0]["room"]
    services = OnlineServices(connect=srv.connector(), tokens=TokenStore(tmp_path / "data"))
    d = Driver(tmp_path, language="en", join=f"mineduel://127.0.0.1:47650/join/{code}", online_services=lambda: services)
    try:
        d.app.ctx.settings = replace(d.app.ctx.settings, player_name="Tester")
        rec = record(d)
        lobby = d.app.stack.top
        assert isinstance(lobby, OnlineScene)
        d.frame()
        for name in ("join", "ready"):
            d.click(d.to_window(lobby.widgets.by_name(name).rect.center))
            d.frame()
        peer.send(type="ready", client_seed="peer-1")
        d.frame()
        game = d.app.stack.top
        assert isinstance(game, GameScene)

        def step(seconds: float) -> None:  # the server's clock and the client's move together
            srv.advance(seconds)
            d.frame(seconds)

        for _ in range(600):  # until my turn (the peer's opening step may run out first: O4)
            view = game.view()
            if view is not None and view.to_move == view.seat:
                break
            step(0.1)
        view = game.view()
        assert view is not None and view.to_move == view.seat
        start = len(rec.cues)
        for _ in range(300):  # let my deadline run out: the server explores for me (O4)
            step(0.1)
            if any(c == "explore" for _, c in rec.cues[start:]):
                break
        names = [c for _, c in rec.cues[start:]]
        assert names.count("deadline_tick") == 5
        assert names.index("explore") > max(i for i, c in enumerate(names) if c == "deadline_tick")
        peer.send(type="resign")
        d.wait(1.0)
        assert rec.names()[-1] == "win"
    finally:
        d.close()
