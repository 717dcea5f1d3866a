"""Sound effects: one small service scenes reach as ``ctx.sounds`` (``play(cue)``), never a source of trouble.

The effects are ``assets/sounds/<cue>.wav``, made by ``scripts/make_sounds.py`` (mono, 22,050 Hz,
16-bit). :class:`MixerSounds` plays them through ``pygame.mixer``:

* the mixer starts when first needed, never before the first frame: ``mine-duel`` asks for it
  right after drawing that frame (while Twisted loads, so the first cue's frame does not wait for
  an audio device), tests and tools on the first cue; a small buffer (:data:`BUFFER` frames, about
  23 ms) keeps the latency low;
* volume and mute are read from the live settings at every cue (``settings().sound_volume`` and
  ``sound_muted``), so the settings popup's changes apply at once; the slider's 0–1 is squared
  into the mixer's amplitude, so equal steps sound like equal steps;
* it never raises: no audio device or a failed start means silence for the rest of the run and
  one log line; a missing or unreadable WAV silences that cue only, with one log line;
* the same cue at most once per :data:`MIN_GAP` seconds (a burst of events costs nothing and
  never stacks ten pops on top of each other), so the frame loop never waits on audio.

:class:`SilentSounds` is the default in :class:`~mineduel.client.scenes.base.Context`: tests and
screenshots need no audio, and a kiosk configured with ``sound = false`` uses it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pygame

from mineduel.client.resources import asset_path

if TYPE_CHECKING:
    from mineduel.client.settings import Settings

log = logging.getLogger(__name__)

#: Every cue the game plays (the file names in assets/sounds without ``.wav``).
CUES = ("explore", "number_changed", "plant", "flag", "ko", "win", "loss", "turn_start", "deadline_tick", "refused")
RATE = 22_050
BUFFER = 512  # frames: ~23 ms at 22,050 Hz; SDL rounds to what the device takes
CHANNELS = 8  # mixer channels: enough for a burst of different cues at once
MIN_GAP = 0.06  # seconds: the same cue again sooner is dropped


def sound_folder() -> Path:
    return asset_path("sounds")


def amplitude(volume: float, muted: bool) -> float:
    """The mixer volume for a settings volume (0–1, squared: closer to how loudness is heard)."""
    if muted:
        return 0.0
    v = min(1.0, max(0.0, volume))
    return v * v


class Sounds:
    """What scenes call. This base class is silent; :class:`MixerSounds` makes the noise."""

    def play(self, cue: str) -> None:
        """Play ``cue`` (one of :data:`CUES`) now, if sound is on; never raises, never waits."""

    def available(self) -> bool:
        """Sound can be heard on this machine (starts the mixer if it has not started yet)."""
        return False

    def close(self) -> None:
        """Stop the mixer (the app is closing)."""


class SilentSounds(Sounds):
    """No sound at all: the default for tests and screenshots, and a kiosk with ``sound = false``."""


class MixerSounds(Sounds):
    """The real service on ``pygame.mixer`` (see the module docstring)."""

    def __init__(self, settings: Callable[[], Settings], clock: Callable[[], float], *, folder: Path | None = None,
                 master: float = 1.0) -> None:
        self._settings = settings
        self._clock = clock
        self._folder = folder
        self.master = master  # a kiosk's overall level on top of the player's volume
        self._state = "new"  # "new" → "ready" | "failed"
        self._ours = False  # this object started the mixer (and stops it)
        self._sounds: dict[str, pygame.mixer.Sound | None] = {}
        self._last: dict[str, float] = {}
        self.played = 0  # cues that reached the mixer (tests and benchmarks read it)
        self.last_volume: float | None = None  # the volume the last of them played at

    # ----- the mixer ------------------------------------------------------------------------------------
    def _ready(self) -> bool:
        if self._state == "new":
            self._state = "failed"
            try:
                if pygame.mixer.get_init() is None:
                    pygame.mixer.init(frequency=RATE, size=-16, channels=1, buffer=BUFFER)
                    self._ours = True
                pygame.mixer.set_num_channels(CHANNELS)
                self._state = "ready"
            except Exception as exc:  # noqa: BLE001 - no device, no driver, a broken SDL: all mean "silent"
                log.info("sound: no audio (%s); the game stays silent", exc)
        return self._state == "ready"

    def available(self) -> bool:
        return self._ready()

    def _sound(self, cue: str) -> pygame.mixer.Sound | None:
        if cue in self._sounds:
            return self._sounds[cue]
        sound = None
        path = (self._folder or sound_folder()) / f"{cue}.wav"
        try:
            sound = pygame.mixer.Sound(str(path))
        except Exception as exc:  # noqa: BLE001 - missing or corrupt file: that cue is silent, the game goes on
            log.warning("sound: cannot load %s (%s); that sound stays silent", path, exc)
        self._sounds[cue] = sound
        return sound

    # ----- cues ----------------------------------------------------------------------------------------------
    def play(self, cue: str) -> None:
        try:
            settings = self._settings()
            volume = amplitude(settings.sound_volume, settings.sound_muted) * self.master
            if volume <= 0.0:
                return
            now = self._clock()
            last = self._last.get(cue)
            if last is not None and 0 <= now - last < MIN_GAP:
                return
            if not self._ready():
                return
            sound = self._sound(cue)
            if sound is None:
                return
            self._last[cue] = now
            sound.set_volume(volume)
            sound.play()
            self.played += 1
            self.last_volume = volume
        except Exception:  # a sound must never cost the player a frame (logged once)
            if self._state != "failed":
                log.exception("sound: playing %r failed; the game stays silent", cue)
            self._state = "failed"

    def close(self) -> None:
        if self._ours and self._state == "ready":
            try:
                pygame.mixer.quit()
            except Exception:  # closing anyway (logged at debug)
                log.debug("sound: mixer quit failed", exc_info=True)
        self._state = "failed"
        self._sounds.clear()
