#!/usr/bin/env python3
"""Regenerate assets/sounds/*.wav: the game's ten sound effects, synthesised from fixed parameters.

    .venv/bin/python scripts/make_sounds.py            # write assets/sounds/
    .venv/bin/python scripts/make_sounds.py --check    # exit 1 if a committed file differs

Why synthesised: no licence to track, a few kilobytes each, and anyone can change a sound by
editing a number here. Only the standard library is used (``math``, ``array``, ``wave``); the one
source of noise is a fixed-seed linear congruential generator, so the output is the same bytes on
every run (tests/client/test_sounds.py holds the committed files to it).

Format: mono, 22,050 Hz, signed 16-bit PCM. Every effect gets a short fade in and out (no click
at either end) and is normalised to its own peak level, so the set sounds even: quiet, frequent
cues (explore, the deadline tick) sit lower than the rare ones (KO, win).
"""

from __future__ import annotations

import argparse
import io
import math
import sys
import wave
from array import array
from collections.abc import Callable, Iterable
from pathlib import Path

RATE = 22_050
ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "assets" / "sounds"
FADE_IN = 0.002  # seconds of linear fade at the start ...
FADE_OUT = 0.012  # ... and at the end of every effect

Samples = list[float]


# ----- building blocks ------------------------------------------------------------------------------


def _n(seconds: float) -> int:
    return max(1, round(seconds * RATE))


def silence(seconds: float) -> Samples:
    return [0.0] * _n(seconds)


def tone(freq: float | Callable[[float], float], seconds: float, *, decay: float = 0.0, attack: float = 0.004,
         release: float = 0.015, harmonics: Iterable[tuple[float, float]] = ((1.0, 1.0),)) -> Samples:
    """A note: partials (multiple of ``freq``, amplitude) with a short attack, an exponential decay
    (``decay`` per second; 0 holds) and a raised-cosine release over its last ``release`` seconds, so
    a note never stops on a click. ``freq`` may be a function of time (a pitch sweep)."""
    parts = tuple(harmonics)
    out: Samples = []
    phase = 0.0
    n = _n(seconds)
    tail = _n(release)
    for i in range(n):
        t = i / RATE
        f = freq(t) if callable(freq) else freq
        phase += 2 * math.pi * f / RATE
        value = sum(a * math.sin(phase * m) for m, a in parts)
        env = min(1.0, t / attack) if attack > 0 else 1.0
        left = n - 1 - i
        if left < tail:
            env *= 0.5 - 0.5 * math.cos(math.pi * left / tail)
        out.append(value * env * math.exp(-decay * t))
    return out


def noise(seconds: float, *, seed: int, decay: float = 0.0, smooth: float = 0.0) -> Samples:
    """White noise from a fixed-seed LCG, one-pole low-passed by ``smooth`` (0: none, 0.9: dull)."""
    state = seed & 0x7FFFFFFF
    out: Samples = []
    last = 0.0
    for i in range(_n(seconds)):
        state = (1103515245 * state + 12345) & 0x7FFFFFFF
        white = state / 0x3FFFFFFF - 1.0
        last = smooth * last + (1 - smooth) * white
        out.append(last * math.exp(-decay * i / RATE))
    tail = min(len(out), _n(0.01))
    for k in range(tail):  # a short release, as for notes
        out[-1 - k] *= 0.5 - 0.5 * math.cos(math.pi * k / tail)
    return out


def high_pass(samples: Samples, amount: float) -> Samples:
    """A one-pole high pass (``amount`` near 1 keeps only the bright part)."""
    out: Samples = []
    prev_in = prev_out = 0.0
    for x in samples:
        prev_out = amount * (prev_out + x - prev_in)
        prev_in = x
        out.append(prev_out)
    return out


def mix(*layers: tuple[Samples, float]) -> Samples:
    """Layers (samples, gain) added, the result as long as the longest."""
    length = max(len(s) for s, _ in layers)
    out = [0.0] * length
    for samples, gain in layers:
        for i, x in enumerate(samples):
            out[i] += x * gain
    return out


def then(*parts: Samples, overlap: float = 0.0) -> Samples:
    """Parts one after another; each next one starts ``overlap`` seconds before the last ends."""
    out: Samples = []
    lap = _n(overlap) if overlap else 0
    for part in parts:
        start = max(0, len(out) - lap) if out else 0
        need = start + len(part) - len(out)
        if need > 0:
            out.extend([0.0] * need)
        for i, x in enumerate(part):
            out[start + i] += x
    return out


def finish(samples: Samples, peak: float) -> bytes:
    """Fades against clicks, then the peak normalised to ``peak`` (0–1 of full scale): 16-bit PCM."""
    n = len(samples)
    fin, fout = _n(FADE_IN), _n(FADE_OUT)
    shaped = []
    for i, x in enumerate(samples):
        gain = min(1.0, i / fin, (n - 1 - i) / fout)
        shaped.append(x * max(0.0, gain))
    top = max(abs(x) for x in shaped) or 1.0
    scale = peak * 32767 / top
    pcm = array("h", (max(-32767, min(32767, round(x * scale))) for x in shaped))
    if sys.byteorder == "big":
        pcm.byteswap()  # WAV data is little-endian
    return pcm.tobytes()


def note(name: str) -> float:
    """Equal-tempered frequency of e.g. ``"C5"``, ``"F#4"``."""
    semis = {"C": -9, "D": -7, "E": -5, "F": -4, "G": -2, "A": 0, "B": 2}[name[0]]
    rest = name[1:]
    if rest.startswith("#"):
        semis, rest = semis + 1, rest[1:]
    elif rest.startswith("b"):
        semis, rest = semis - 1, rest[1:]
    return 440.0 * 2 ** ((semis + 12 * (int(rest) - 4)) / 12)


BELL = ((1.0, 1.0), (2.0, 0.35), (3.01, 0.12), (4.2, 0.05))  # a soft mallet: mostly the fundamental
WARM = ((1.0, 1.0), (2.0, 0.25), (3.0, 0.08))


# ----- the effects -------------------------------------------------------------------------------------


def explore() -> Samples:
    """A soft pop: a quick downward blip with a breath of noise."""
    blip = tone(lambda t: 720 - 2600 * t, 0.075, decay=55, attack=0.002)
    air = noise(0.03, seed=11, decay=140, smooth=0.6)
    return mix((blip, 1.0), (air, 0.18))


def number_changed() -> Samples:
    """A tiny chime: two high bell notes a fifth apart, close together."""
    a = tone(note("E6"), 0.16, decay=26, harmonics=BELL)
    b = tone(note("B6"), 0.14, decay=30, harmonics=BELL)
    return then(a, b, overlap=0.12)


def plant() -> Samples:
    """A low thunk: a falling low sine with a dull knock of noise."""
    body = tone(lambda t: 150 - 380 * t, 0.17, decay=24, attack=0.003, harmonics=((1.0, 1.0), (2.0, 0.2)))
    knock = noise(0.05, seed=23, decay=80, smooth=0.85)
    return mix((body, 1.0), (knock, 0.5))


def flag() -> Samples:
    """A snap: a bright noise crack over a short high blip."""
    crack = high_pass(noise(0.05, seed=37, decay=120), 0.7)
    blip = tone(lambda t: 1500 - 6000 * t, 0.05, decay=70, attack=0.001)
    return mix((crack, 0.7), (blip, 0.6))


def ko() -> Samples:
    """A burst: a noise blast that darkens as it fades, over a falling boom."""
    blast = noise(0.42, seed=41, decay=9, smooth=0.55)
    rumble = noise(0.42, seed=43, decay=6, smooth=0.95)
    boom = tone(lambda t: 95 - 110 * t, 0.42, decay=8, attack=0.003)
    return mix((blast, 0.55), (rumble, 1.6), (boom, 0.9))


def win() -> Samples:
    """A rising arpeggio (C–E–G–C), the last note held and ringing."""
    steps = [tone(note(n), 0.16, decay=9, harmonics=BELL) for n in ("C5", "E5", "G5")]
    top = tone(note("C6"), 0.55, decay=4.5, harmonics=BELL)
    octave = tone(note("C5"), 0.55, decay=4.5, harmonics=WARM)
    return then(*steps, mix((top, 1.0), (octave, 0.35)), overlap=0.05)


def loss() -> Samples:
    """Falling: G–Eb–C, softer and slower, the last note sagging a little."""
    a = tone(note("G4"), 0.24, decay=6, harmonics=WARM)
    b = tone(note("Eb4"), 0.24, decay=6, harmonics=WARM)
    c0 = note("C4")
    c = tone(lambda t: c0 * (1 - 0.03 * min(1.0, t / 0.5)), 0.6, decay=3.5, harmonics=WARM)
    return then(a, b, c, overlap=0.04)


def turn_start() -> Samples:
    """Two notes up a fourth: your turn."""
    a = tone(note("E5"), 0.11, decay=18, harmonics=BELL)
    b = tone(note("A5"), 0.17, decay=14, harmonics=BELL)
    return then(a, b, overlap=0.02)


def deadline_tick() -> Samples:
    """A short woody tick (once a second in the last five)."""
    click = tone(1800.0, 0.035, decay=140, attack=0.0008, harmonics=((1.0, 1.0), (2.3, 0.3)))
    body = tone(900.0, 0.035, decay=110, attack=0.0008)
    return mix((click, 0.8), (body, 0.6))


def refused() -> Samples:
    """A short muted buzz: a low reedy note with its top rolled off."""
    reed = ((1.0, 1.0), (2.0, 0.5), (3.0, 0.33), (4.0, 0.2), (5.0, 0.12))
    first = tone(140.0, 0.07, decay=12, attack=0.004, harmonics=reed)
    second = tone(140.0, 0.07, decay=20, attack=0.004, harmonics=reed[:3])
    return then(first, silence(0.015), second)


#: cue name → (synthesiser, peak level 0–1). The cue names are client/sound.py's.
EFFECTS: dict[str, tuple[Callable[[], Samples], float]] = {
    "explore": (explore, 0.55),
    "number_changed": (number_changed, 0.42),
    "plant": (plant, 0.75),
    "flag": (flag, 0.55),
    "ko": (ko, 0.9),
    "win": (win, 0.7),
    "loss": (loss, 0.7),
    "turn_start": (turn_start, 0.5),
    "deadline_tick": (deadline_tick, 0.5),
    "refused": (refused, 0.5),
}


def wav_bytes(pcm: bytes) -> bytes:
    """A complete WAV file (the ``wave`` module writes no timestamps: same input, same bytes)."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes(pcm)
    return buffer.getvalue()


def render_all() -> dict[str, bytes]:
    """Every effect as the bytes of its ``.wav`` file, by cue name."""
    return {name: wav_bytes(finish(make(), peak)) for name, (make, peak) in EFFECTS.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="folder for the .wav files (default: assets/sounds)")
    parser.add_argument("--check", action="store_true", help="compare with the files there instead of writing")
    args = parser.parse_args(argv)
    files = render_all()
    stale = []
    total = 0
    for name, data in files.items():
        path = args.out / f"{name}.wav"
        total += len(data)
        if args.check:
            if not path.is_file() or path.read_bytes() != data:
                stale.append(path.name)
            continue
        args.out.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        print(f"{path.name:20s} {len(data):7,d} bytes  {(len(data) - 44) / 2 / RATE:.3f} s")
    if args.check:
        if stale:
            print("differ from scripts/make_sounds.py's output:", ", ".join(stale))
            return 1
        print(f"{len(files)} sounds up to date")
        return 0
    print(f"{len(files)} sounds, {total:,d} bytes in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
