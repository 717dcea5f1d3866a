"""MINE DUEL server package."""
