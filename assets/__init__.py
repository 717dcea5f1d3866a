"""Data package: images, fonts and the UI theme."""
