"""The settings popup (menu → Settings): sound volume and mute, hints, the player name, the language.

Everything applies at once and is kept with the other settings through ``ctx.save_settings``
(a kiosk keeps nothing between players; Context.save_settings knows):

* volume — − / + buttons in steps of :data:`STEP`, or a tap or drag on the bar (saved when the
  finger lifts); ``-`` / ``+`` keys too; the value is shown in per cent. Each change plays a short
  cue at the new volume, so the player hears what was chosen;
* mute — one toggle; the volume is kept while muted (Settings), so unmuting restores it;
* hints — one toggle (off by default): CPU matches then offer *Hint* (the button and H), which
  rings the safest cells to explore (issue 18 item 4); each use is noted in the match's record;
* player name — the name field of the first-use name popup (``name_popup.NameField``: any printable
  character, Korean, Japanese and Chinese included), checked by ``settings.valid_player_name``;
  Enter saves it, so does Close. A name that does not pass keeps the popup open with the reason
  (nothing typed is dropped silently); an empty field means "no name" (online play asks again).
  Shown only where online play is offered (a kiosk without it has no use for a name);
* invite links — on a Linux (freedesktop) desktop, not a kiosk: whether a click on a
  ``mineduel://`` link opens this game, and one button that turns it on or off (or repairs an entry
  that starts another copy) exactly as ``mine-duel install-desktop`` / ``uninstall-desktop`` do
  (client/desktop_links.py); a failure is one line and changes nothing;
* language — opens the language picker (its choice then brings this popup back).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial

import pygame

from mineduel.client import desktop_links
from mineduel.client.i18n import native_name
from mineduel.client.scenes.base import Context, Popup
from mineduel.client.scenes.name_popup import NameField, rule_text
from mineduel.client.scenes.popups import BUTTON_H, PAD, TITLE_SIZE, LanguagePopup
from mineduel.client.settings import NAME_MAX, player_name_problem, valid_player_name
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.input import InputEvent, KeyEvent, PointerEvent, PointerKind, TextEvent
from mineduel.client.ui.text import blit_paragraph, blit_text, paragraph_height
from mineduel.client.ui.widgets import Button
from mineduel.shared.wire.player_names import NameRule

STEP = 0.1
ROW = 52  # the volume row and the name field
LABEL = 28  # a section label above its controls
VOLUME_KEYS = {pygame.K_MINUS: -1, pygame.K_KP_MINUS: -1, pygame.K_PLUS: 1, pygame.K_EQUALS: 1, pygame.K_KP_PLUS: 1}


class SettingsPopup(Popup):
    """See the module docstring. ``on_language`` switches the language (the match screen's own
    ``choose_language``: translator, saved setting, relayout)."""

    def __init__(self, ctx: Context, on_language: Callable[[str], None]) -> None:
        super().__init__(ctx)
        self.on_language = on_language
        self.show_name = ctx.allowed.online
        self.name_field = NameField(pygame.Rect(0, 0, 10, ROW), lambda: ctx.t("settings.name_placeholder"),
                                    on_submit=self._submit_name, max_len=NAME_MAX, name="name")
        self.name_field.set_text(ctx.settings.player_name or "")
        self.name_note: str | None = None  # "settings.name_saved" / "settings.name_invalid", else the hint
        self.name_rule: NameRule | None = None  # with "settings.name_invalid": the §17 rule the name breaks
        self._dragging = False
        self.show_links = desktop_links.offered(kiosk=not ctx.allowed.files)
        self.link_state = desktop_links.state() if self.show_links else "off"
        self.link_failure: desktop_links.Failure | None = None  # the last button press's, until the next
        self.relayout()
        self.widgets.focus_name("close")

    # ----- layout ---------------------------------------------------------------------------------------------
    def _inner(self) -> int:
        return self.card.width - 2 * PAD

    def _sound_note(self) -> str | None:
        return None if self.ctx.sounds.available() else self.ctx.t("settings.no_sound")

    def relayout(self) -> None:
        ctx = self.ctx
        inner = self._inner()
        note = self._sound_note()
        self._note_h = 0 if note is None else paragraph_height(ctx.fonts, note, 13, inner) + 6
        # The tallest of the lines under the name field, so the card keeps its size as they change.
        lines = (ctx.t("settings.name_hint", max=NAME_MAX), ctx.t("settings.name_invalid", max=NAME_MAX),
                 ctx.t("settings.name_saved"), *(rule_text(ctx.t, rule) for rule in NameRule))
        self._hint_h = max(paragraph_height(ctx.fonts, line, 13, inner) for line in lines) if self.show_name else 0
        name_h = (LABEL + ROW + 6 + self._hint_h + 16) if self.show_name else 0
        self._hints_note_h = paragraph_height(ctx.fonts, ctx.t("settings.hints_note"), 13, inner)
        hints_h = BUTTON_H + 6 + self._hints_note_h + 16
        link_action = desktop_links.ACTIONS.get(self.link_state) if self.show_links else None
        if self.show_links:  # the tallest state line, so the card keeps its size (and the button its place) on a press
            states = [ctx.t(desktop_links.state_line(s), folder="") for s in desktop_links.STATE_LINES if s != "damaged"]
            self._links_h = max(paragraph_height(ctx.fonts, line, 13, inner) for line in [*states, self._links_line()[0]])
        else:
            self._links_h = 0
        links_h = (LABEL + self._links_h + (10 + BUTTON_H + 16 if link_action else 16)) if self.show_links else 0
        height = (PAD + 44 + LABEL + ROW + 10 + BUTTON_H + self._note_h + 16 + hints_h + name_h + links_h + 54 + 14
                  + BUTTON_H + PAD)
        self.set_card_height(height)
        left, top = self.card.left + PAD, self.card.top + PAD + 44
        self._sound_label_y = top
        y = top + LABEL
        self.bar = pygame.Rect(left + ROW + 10, y, inner - 2 * (ROW + 10), ROW)
        enabled = note is None
        buttons = [
            Button(pygame.Rect(left, y, ROW, ROW), lambda: "\u2212", lambda: self.step(-1), text_size=26, name="volume_down",
                   enabled=enabled),
            Button(pygame.Rect(self.bar.right + 10, y, ROW, ROW), lambda: "+", lambda: self.step(1), text_size=26,
                   name="volume_up", enabled=enabled),
        ]
        y += ROW + 10
        muted = ctx.settings.sound_muted
        buttons.append(Button(pygame.Rect(left, y, inner, BUTTON_H), lambda: ctx.t("settings.mute"), self.toggle_mute,
                              style="selected" if muted else "secondary", icon="check" if muted else None, name="mute",
                              enabled=enabled))
        y += BUTTON_H
        self._note_y = y + 4
        y += self._note_h + 16
        hints = ctx.settings.hints
        buttons.append(Button(pygame.Rect(left, y, inner, BUTTON_H), lambda: ctx.t("settings.hints"), self.toggle_hints,
                              style="selected" if hints else "secondary", icon="check" if hints else "hint",
                              icon_color=None if hints else palette.PRIMARY, name="hints"))
        y += BUTTON_H + 6
        self._hints_note_y = y
        y += self._hints_note_h + 16
        if self.show_name:
            self._name_label_y = y
            y += LABEL
            self.name_field.rect = pygame.Rect(left, y, inner, ROW)
            y += ROW + 6
            self._hint_y = y
            y += self._hint_h + 16
        if self.show_links:
            self._links_label_y = y
            y += LABEL
            self._links_y = y
            y += self._links_h
            if link_action is not None:
                y += 10
                key = {"install": "settings.links_turn_on", "uninstall": "settings.links_turn_off"}[link_action]
                if self.link_state in ("moved", "other"):
                    key = "settings.links_fix"
                buttons.append(Button(pygame.Rect(left, y, inner, BUTTON_H), partial(ctx.t, key), self.toggle_links,
                                      name="links"))
                y += BUTTON_H
            y += 16
        buttons.append(Button(pygame.Rect(left, y, inner, 54), self._language_label, self.open_language, icon="globe",
                              icon_color=palette.ME_LIGHT, layout="list", name="language"))
        y += 54 + 14
        buttons.append(Button(pygame.Rect(left, y, inner, BUTTON_H), lambda: ctx.t("action.close"), self.done,
                              style="primary", name="close"))
        self.widgets.set(buttons)

    def _language_label(self) -> str:
        code = self.ctx.settings.language or self.ctx.tr.language
        return self.ctx.t("settings.language", language=native_name(code))

    def _name_line(self) -> tuple[str, palette.Color]:
        t = self.ctx.t
        if self.name_note == "settings.name_invalid":
            if self.name_rule is not None:
                return rule_text(t, self.name_rule), palette.WARN
            return t("settings.name_invalid", max=NAME_MAX), palette.WARN
        if self.name_note == "settings.name_saved":
            return t("settings.name_saved"), palette.GOOD
        return t("settings.name_hint", max=NAME_MAX), palette.INK_SOFT

    # ----- sound ----------------------------------------------------------------------------------------------
    @property
    def volume(self) -> float:
        return self.ctx.settings.sound_volume

    def set_volume(self, value: float, *, save: bool = True, cue: bool = True) -> None:
        """Apply ``value`` (clamped to 0–1, two decimals) live; ``save`` keeps it; a cue lets it be heard."""
        value = round(min(1.0, max(0.0, value)), 2)
        settings = self.ctx.settings
        changed = value != settings.sound_volume
        new = replace(settings, sound_volume=value, sound_muted=False if value > 0 and changed else settings.sound_muted)
        if save:
            self.ctx.save_settings(new)
        else:
            self.ctx.settings = new
        if changed and cue:
            self.ctx.sounds.play("explore")
        if new.sound_muted != settings.sound_muted:
            self.relayout()
        self.ctx.invalidate(self.card)

    def step(self, direction: int) -> None:
        steps = round(self.volume / STEP) + direction
        self.set_volume(steps * STEP)

    def toggle_mute(self) -> None:
        settings = self.ctx.settings
        self.ctx.save_settings(replace(settings, sound_muted=not settings.sound_muted))
        if settings.sound_muted:  # just unmuted: let it be heard
            self.ctx.sounds.play("turn_start")
        self.relayout()
        self.ctx.invalidate(self.card)

    def toggle_hints(self) -> None:
        """Hints on or off; the match screen adds or removes its Hint button at once."""
        settings = self.ctx.settings
        self.ctx.save_settings(replace(settings, hints=not settings.hints))
        self.relayout()
        self.ctx.invalidate(self.card)

    def _volume_at(self, x: float) -> float:
        track = self.bar.inflate(-28, 0)
        return round((x - track.left) / max(1, track.width) / 0.05) * 0.05

    # ----- invite links ---------------------------------------------------------------------------------------------
    def _links_line(self) -> tuple[str, palette.Color]:
        """The row's one line: why the last press changed nothing, else where the links stand."""
        t = self.ctx.t
        failure = self.link_failure
        if failure is not None:
            return t(failure.key, folder=failure.folder), palette.WARN
        folder = desktop_links.shown(desktop_links.manifest_path())  # the one a "damaged" line names
        color = {"on": palette.GOOD, "off": palette.INK_SOFT, "system": palette.GOOD}.get(self.link_state, palette.WARN)
        return t(desktop_links.state_line(self.link_state), folder=folder), color

    def toggle_links(self) -> None:
        """Install or remove the link handler as the sub-commands do; a failure is said and changes nothing."""
        action = desktop_links.ACTIONS.get(self.link_state)
        if action is None:
            return
        self.link_failure = desktop_links.apply(action)
        self.link_state = desktop_links.state()
        self.relayout()
        self.widgets.focus_name("links")
        self.ctx.invalidate(self.card)

    # ----- name and language -------------------------------------------------------------------------------------
    def _submit_name(self, text: str) -> None:
        self.save_name()

    def save_name(self) -> bool:
        """Keep the typed name (or "no name" for an empty field); False, with the reason shown, if it is not one."""
        if not self.show_name:
            return True
        text = self.name_field.text.strip()
        name = None if not text else valid_player_name(text)
        if text and name is None:
            self.name_note = "settings.name_invalid"
            self.name_rule = player_name_problem(text)
            self.name_field.focused = True
            self.relayout()
            self.ctx.invalidate(self.card)
            return False
        if name != self.ctx.settings.player_name:
            self.ctx.save_settings(replace(self.ctx.settings, player_name=name))
            self.name_note = "settings.name_saved"
        self.name_field.set_text(name or "")
        self.name_field.focused = False
        self.relayout()
        self.ctx.invalidate(self.card)
        return True

    def open_language(self) -> None:
        if not self.save_name():
            return
        ctx, on_language = self.ctx, self.on_language

        def chosen(code: str) -> None:
            on_language(code)
            ctx.stack.open_popup(SettingsPopup(ctx, on_language))

        ctx.stack.open_popup(LanguagePopup(ctx, chosen))

    def done(self) -> None:
        if self.save_name():
            self.close()

    def dismiss(self) -> None:
        self.done()  # Escape or a background click keeps the name too (or says why it cannot)

    # ----- input ----------------------------------------------------------------------------------------------------
    def process_event(self, event: InputEvent) -> bool:
        if isinstance(event, KeyEvent) and event.key == pygame.K_ESCAPE and self.name_field.focused:
            self.name_field.focused = False  # Escape leaves the field first; a second one closes
            self.ctx.invalidate(self.name_field.rect.inflate(12, 12))
            return True
        return super().process_event(event)

    def handle_card_event(self, event: InputEvent) -> bool:
        field = self.name_field
        if isinstance(event, PointerEvent):
            if self.show_name and event.kind is PointerKind.DOWN:
                was = field.focused
                field.handle(event)
                if field.focused:
                    self.widgets.clear_focus()
                if was != field.focused:
                    self.ctx.invalidate(field.rect.inflate(12, 12))
            if self._bar_event(event):
                return True
            return self.widgets.handle(event)
        if isinstance(event, TextEvent | KeyEvent) and field.focused:
            key = event.key if isinstance(event, KeyEvent) else None
            used = field.handle(event)
            if self.name_note is not None and key not in (pygame.K_RETURN, pygame.K_KP_ENTER):
                self.name_note = None  # typing again: back to the hint
                self.relayout()
            self.ctx.invalidate(self.card)
            if used or isinstance(event, TextEvent):
                return True
            if key == pygame.K_TAB:  # out of the field to the first button
                self.widgets.focus = None
                return self.widgets.handle(event)
            return True
        if isinstance(event, KeyEvent):
            if event.key in VOLUME_KEYS and self.ctx.sounds.available():
                self.step(VOLUME_KEYS[event.key])
                return True
            focused = self.widgets.focused()
            if event.key == pygame.K_TAB and self.show_name and focused is not None and focused.name == "close" \
                    and not event.mod & pygame.KMOD_SHIFT:
                self.widgets.clear_focus()  # Tab from the last button into the name field
                field.focused = True
                self.ctx.invalidate(self.card)
                return True
        return self.widgets.handle(event)

    def _bar_event(self, event: PointerEvent) -> bool:
        """A tap or drag on the volume bar sets the volume; saved when the pointer lifts."""
        if not self.ctx.sounds.available():
            return False
        if event.kind is PointerKind.DOWN and self.bar.collidepoint(event.pos):
            self._dragging = True
            self.set_volume(self._volume_at(event.pos[0]), save=False, cue=False)
            return True
        if not self._dragging:
            return False
        if event.kind is PointerKind.MOVE:
            self.set_volume(self._volume_at(event.pos[0]), save=False, cue=False)
        elif event.kind in (PointerKind.UP, PointerKind.CANCEL):
            self._dragging = False
            self.ctx.save_settings(self.ctx.settings)
            self.ctx.sounds.play("explore")
        return True

    # ----- drawing ----------------------------------------------------------------------------------------------------
    def draw_content(self, surface: pygame.Surface, card: pygame.Rect) -> None:
        ctx = self.ctx
        fonts = ctx.fonts
        dy = card.top - self.card.top  # the appear animation's offset
        inner = self._inner()
        title = ctx.t("settings.title")
        tw = fonts.width(title, TITLE_SIZE, True)
        x = card.centerx - (tw + 36) // 2
        surface.blit(shapes.icon("sound", 28, palette.PRIMARY), (x, card.top + PAD + 2))
        blit_text(surface, fonts, title, TITLE_SIZE, palette.INK, bold=True, midleft=(x + 36, card.top + PAD + 16))
        left = card.left + PAD
        blit_text(surface, fonts, ctx.t("settings.volume"), 15, palette.INK_SOFT, bold=True,
                  midleft=(left, self._sound_label_y + dy + LABEL // 2 - 2))
        self._draw_bar(surface, self.bar.move(0, dy))
        note = self._sound_note()
        if note is not None:
            blit_paragraph(surface, fonts, note, 13, palette.WARN, pygame.Rect(left, self._note_y + dy, inner, self._note_h),
                           align="center")
        blit_paragraph(surface, fonts, ctx.t("settings.hints_note"), 13, palette.INK_SOFT,
                       pygame.Rect(left, self._hints_note_y + dy, inner, self._hints_note_h + 4))
        if self.show_name:
            blit_text(surface, fonts, ctx.t("settings.name"), 15, palette.INK_SOFT, bold=True,
                      midleft=(left, self._name_label_y + dy + LABEL // 2 - 2))
            field = self.name_field
            field.rect.move_ip(0, dy)
            try:
                field.draw(surface, fonts, keyboard=ctx.keyboard)
            finally:
                field.rect.move_ip(0, -dy)
            line, color = self._name_line()
            blit_paragraph(surface, fonts, line, 13, color, pygame.Rect(left, self._hint_y + dy, inner, self._hint_h + 4))
        if self.show_links:
            blit_text(surface, fonts, ctx.t("settings.links"), 15, palette.INK_SOFT, bold=True,
                      midleft=(left, self._links_label_y + dy + LABEL // 2 - 2))
            line, color = self._links_line()
            blit_paragraph(surface, fonts, line, 13, color, pygame.Rect(left, self._links_y + dy, inner, self._links_h + 4))

    def _draw_bar(self, surface: pygame.Surface, bar: pygame.Rect) -> None:
        settings = self.ctx.settings
        off = settings.sound_muted or not self.ctx.sounds.available()
        surface.blit(shapes.rounded(bar.size, 14, palette.BACKGROUND_DEEP, 1, palette.CARD_BORDER), bar)
        track = pygame.Rect(bar.left + 14, bar.bottom - 16, bar.width - 28, 6)
        surface.blit(shapes.rounded(track.size, 3, palette.CARD_RAISED), track)
        filled = round(track.width * settings.sound_volume)
        color = palette.INK_FAINT if off else palette.PRIMARY
        if filled >= 6:
            surface.blit(shapes.rounded((filled, 6), 3, color), track.topleft)
        knob = shapes.circle(14, palette.INK_SOFT if off else palette.PRIMARY)
        surface.blit(knob, knob.get_rect(center=(track.left + filled, track.centery)))
        surface.blit(shapes.icon("sound_off" if off else "sound", 22, palette.INK_SOFT if off else palette.INK),
                     (bar.left + 12, bar.top + 6))
        text = f"{round(settings.sound_volume * 100)}%"
        blit_text(surface, self.ctx.fonts, text, 17, palette.INK_SOFT if off else palette.INK, bold=True,
                  midright=(bar.right - 14, bar.top + 17))



def open_settings(ctx: Context, on_language: Callable[[str], None]) -> None:
    """The game menu's Settings entry."""
    ctx.stack.open_popup(SettingsPopup(ctx, on_language))
