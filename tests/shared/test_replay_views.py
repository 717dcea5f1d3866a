"""`mine-duel replay FILE --view 0|1|full --at N` (issue 19, RECORD.md): one position as the ASCII
board notation. A seat's view is exactly what that seat was shown (V2): for CPU records the
engine's ``state.view(seat)`` step by step; for ONLINE records every ``state`` message the seat
received live from an in-process server. Without the new options the output is unchanged.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support.harness import Harness, oracle_message, play_to_score_end
from support.strategies import random_records

from mineduel.shared.cli import replay
from mineduel.shared.cli.replay import position_text, replay_text
from mineduel.shared.fairness.record import from_json
from mineduel.shared.rules.engine import GameState
from mineduel.shared.rules.notation import from_ascii, to_ascii, view_to_ascii
from mineduel.shared.wire import codec
from mineduel.shared.wire.board import view_of


def board_rows(text: str) -> str:
    """The notation rows of a ``--view`` output, without its ``#`` header."""
    lines = text.splitlines()
    assert lines[0].startswith("# view=")
    assert len(lines) == 9
    return "\n".join(lines[1:])


def run_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = replay.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_v2_cpu_seat_views_equal_the_engine_views_step_by_step() -> None:
    """V2: for every prefix of CPU records, ``--view seat --at N`` is the engine's view of that seat;
    the seat never sees a letter of the other's mines, and ``full`` is the whole truth."""
    for data in random_records(19, 12, "cpu"):
        text = json.dumps(data)
        record = from_json(data)
        state = GameState(record.variant)
        for n in range(len(record.actions) + 1):
            if n:
                state.apply(record.actions[n - 1])
            assert board_rows(position_text(text, "full", n)) == to_ascii(state)
            for seat in (0, 1):
                rows = board_rows(position_text(text, str(seat), n))
                assert rows == view_to_ascii(state.view(seat))
                foreign = "B" if seat == 0 else "A"
                tokens = rows.split()
                assert not any(t[0] in (foreign, "X") for t in tokens)
                own = {i for i, t in enumerate(tokens) if t[0] in "AB"}
                assert own == {i for i in range(64) if state.mines[seat] >> i & 1 and not state.revealed >> i & 1}


def test_v2_a_seat_view_is_valid_notation_with_the_numbers_shown() -> None:
    """The printed view parses back (from_ascii ignores the header): revealers and numbers agree."""
    data = random_records(7, 1, "cpu")[0]
    text = json.dumps(data)
    n = len(data["actions"]) // 2
    full = from_ascii(position_text(text, "full", n))
    for seat in (0, 1):
        rows = board_rows(position_text(text, str(seat), n))
        for cell, token in enumerate(rows.split()):
            if full.revealed >> cell & 1:
                assert token == f"{'o' if full.revealed_by0 >> cell & 1 else 'x'}{full.number(cell)}"


def _online_match(seed: int) -> tuple[dict[str, Any], list[tuple[int, dict[str, Any]]]]:
    """A whole ONLINE match on the in-process server: opening timeouts and auto-moves, markers,
    a normal-turn timeout, a score ending. The record and every ``state`` each seat received."""
    h = Harness(seed=seed)
    first, second = h.start(("s1", "s2"))
    seats = {first.seat: first, second.seat: second}
    h.advance(20.0)  # O4: an opening timeout and its auto-move
    for moves in (3, 4):
        for _ in range(moves):
            state = h.match(first).state
            seats[state.to_move].send(**oracle_message(state))
        state = h.match(first).state
        mover = seats[state.to_move]
        if state.phase.value in ("explore", "plant", "end_wait"):
            mover.send(type="flag", cell=[7, 7])
    h.advance(20.0)  # O5: a normal turn times out
    play_to_score_end(h, first, second)
    record = first.last("match_end")["record"]
    received = [(c.seat, msg) for c in (first, second) for msg in c.all("state") if msg["match_id"] == record["match_id"]]
    return record, received


@pytest.mark.parametrize("seed", [3, 8, 21])
def test_v2_online_seat_views_equal_what_each_seat_received_live(seed: int) -> None:
    """V2/O13: each ``state`` message a seat received, read back as a view, is ``--view seat --at seq``."""
    record, received = _online_match(seed)
    text = json.dumps(record)
    parsed = from_json(record)
    types = {a["type"] for a in record["actions"]}
    assert {"timeout", "flag", "end_turn"} <= types
    assert len(received) >= 2 * len(record["actions"])
    seqs = set()
    for seat, msg in received:
        live = view_of(codec.parse_server(msg))  # type: ignore[arg-type]
        seqs.add(msg["seq"])
        assert board_rows(position_text(text, str(seat), msg["seq"])) == view_to_ascii(live)
        state = replay.state_at(parsed, msg["seq"])
        assert replace(state.view(seat), deadline=live.deadline) == live
    assert max(seqs) == len(record["actions"])


def test_the_output_without_the_new_options_is_unchanged(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """RECORD.md: `mine-duel replay FILE` still prints the one JSON object, byte for byte."""
    data = random_records(11, 1, "online")[0]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    code, out, err = run_main(capsys, str(path))
    assert code == 0 and err == ""
    assert out == json.dumps(replay_text(path.read_bytes()), separators=(",", ":")) + "\n"


def test_at_defaults_to_the_end_and_view_defaults_to_full(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = random_records(12, 1, "cpu")[0]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    n = len(data["actions"])
    code, out, _ = run_main(capsys, str(path), "--view", "1")
    assert code == 0 and out == position_text(path.read_bytes(), "1", n)
    assert out.startswith(f"# view=1 at={n}/{n} phase=over to_move=- turn=")
    code, out, _ = run_main(capsys, str(path), "--at", "0")
    empty = "\n".join([" ".join([".."] * 8)] * 8)
    assert code == 0 and out == f"# view=full at=0/{n} phase=open_explore to_move=0 turn=0\n{empty}\n"


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--view", "2"], "is not one of 0, 1, full"),
        (["--view", "seat0", "--at", "1"], "is not one of 0, 1, full"),
        (["--view", "0", "--at", "-1"], "outside 0.."),
        (["--view", "0", "--at", "100000"], "outside 0.."),
        (["--view", "full", "--at", "three"], "not a whole number"),
        (["--at", "1.5"], "not a whole number"),
    ],
)
def test_bad_view_or_at_is_a_message_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], words: str
) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(random_records(13, 1, "cpu")[0]))
    code, out, err = run_main(capsys, str(path), *argv)
    assert code == 2 and out == ""
    assert err.startswith("mine-duel replay: ") and words in err and "Traceback" not in err


def test_an_invalid_record_with_view_is_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text('{"format": "mine-duel-record/1", "variant": "cpu"}')
    code, out, err = run_main(capsys, str(path), "--view", "0")
    assert code == 2 and out == "" and "invalid record" in err


def test_the_installed_command_prints_a_view(tmp_path: Path) -> None:
    """`mine-duel replay FILE --view 0 --at N` through the real entry point."""
    data = random_records(random.Random(4).randrange(100), 1, "cpu")[0]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    proc = subprocess.run(
        [sys.executable, "-m", "mineduel.client", "replay", str(path), "--view", "0", "--at", "4"],
        capture_output=True, timeout=60, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode() == position_text(path.read_bytes(), "0", 4)
