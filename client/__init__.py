"""MINE DUEL client package."""
