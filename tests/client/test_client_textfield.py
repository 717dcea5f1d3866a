"""The one-line text entry used for addresses, room codes and invite links."""

from __future__ import annotations

import pygame

from mineduel.client.ui.input import KeyEvent, PointerEvent, PointerKind, TextEvent, translate
from mineduel.client.ui.textfield import TextField


def focused_field() -> TextField:
    field = TextField(pygame.Rect(0, 0, 200, 50), lambda: "host:port")
    field.handle(PointerEvent(PointerKind.DOWN, (10, 10)))
    assert field.focused
    return field


def test_characters_come_from_text_input_even_when_key_events_carry_none() -> None:
    """Typed fast (or by a program), KEYDOWNs can arrive with no unicode: no character may be lost."""
    field = focused_field()
    for ch in "127.0.0.1:47700":
        field.handle(KeyEvent(0, 0, ""))  # the KEYDOWN, its unicode not yet filled in
        field.handle(TextEvent(ch))
    assert field.text == "127.0.0.1:47700"


def test_a_key_event_with_unicode_does_not_type_twice() -> None:
    """SDL sends KEYDOWN (with unicode) and TEXTINPUT for one key press: the text appears once."""
    field = focused_field()
    field.handle(KeyEvent(pygame.K_a, 0, "a"))
    field.handle(TextEvent("a"))
    assert field.text == "a"


def test_text_input_is_filtered_and_bounded() -> None:
    """Characters outside the allowed set are dropped and the length limit holds."""
    field = focused_field()
    field.max_len = 5
    field.handle(TextEvent("ab\x00c한d"))
    field.handle(TextEvent("efgh"))
    assert field.text == "abcde"


def test_an_unfocused_field_ignores_text() -> None:
    """Text typed while another widget has focus does not land in the field."""
    field = TextField(pygame.Rect(0, 0, 200, 50), lambda: "code")
    assert field.handle(TextEvent("x")) is False
    assert field.text == ""


def test_pygame_textinput_events_become_text_events() -> None:
    """The pygame TEXTINPUT event is translated into a scene-level TextEvent."""
    event = pygame.event.Event(pygame.TEXTINPUT, text="7")
    assert translate(event, lambda p: p, (390, 844)) == TextEvent("7")
