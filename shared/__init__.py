"""MINE DUEL shared package."""
