"""Data package: the player-facing string catalogs."""
