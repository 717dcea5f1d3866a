"""The client's small drawing kit: palette, text, shapes, widgets and the board view.

Everything here draws onto a logical 390×844 canvas (U4); the app scales that canvas to the
window. Nothing here knows about matches, controllers or Twisted.
"""
