"""Test doubles, oracles and strategies shared by the suites (imported as ``support.…``)."""
