"""The font book holds no file open: a long-lived client, or a test run that makes hundreds of apps,
must not run out of descriptors (select() stops at 1,024)."""

from __future__ import annotations

import os
import sys

import pygame
import pytest

from mineduel.client.ui.text import FontBook


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts descriptors through /proc/self/fd")
def test_fonts_of_every_size_open_no_file():
    pygame.font.init()
    before = len(os.listdir("/proc/self/fd"))
    books = [FontBook() for _ in range(5)]
    for book in books:
        for size in range(10, 40, 3):
            for bold in (False, True):
                assert book.render("한국어 日本語 简体中文", size, (0, 0, 0), bold).get_width() > 0
    assert len(os.listdir("/proc/self/fd")) - before <= 2  # the two font files were read, then closed
