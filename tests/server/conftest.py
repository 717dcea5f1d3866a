"""Fixtures of the server tests: a throw-away PostgreSQL (tests/support/postgres.py, issue 21)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from support.postgres import PostgresServer, PostgresUnavailable, require


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the whole session (started on first use, stopped at the end);
    skipped with the reason where there is none, failed instead under ``.ci/run``."""
    try:
        server = PostgresServer().start()
    except PostgresUnavailable as exc:
        if require():
            pytest.fail(f"MINEDUEL_REQUIRE_POSTGRES is set but {exc}")
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_dsn(pg_server: PostgresServer) -> str:
    """The address of a fresh, empty database of its own for this test."""
    return pg_server.new_database()


@pytest.fixture
def pg_open(pg_dsn: str) -> Iterator[Callable[..., Any]]:
    """Opens ``PostgresStorage`` objects on this test's database (``node=`` and the other options
    as keywords); each is closed at the end of the test, so no connection outlives it."""
    from mineduel.server.storage_pg import PostgresStorage

    opened: list[PostgresStorage] = []

    def open_storage(**options: Any) -> PostgresStorage:
        options.setdefault("node", "node-a")
        storage = PostgresStorage(pg_dsn, **options)
        opened.append(storage)
        return storage

    yield open_storage
    for storage in opened:
        storage.close()


@pytest.fixture
def pg_storage(pg_open: Callable[..., Any]) -> Any:
    """One ``PostgresStorage`` (node ``node-a``) on a fresh database."""
    return pg_open()
