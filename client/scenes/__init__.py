"""Scenes (full screens) and popups, run by :class:`~mineduel.client.scenes.base.SceneStack`."""
