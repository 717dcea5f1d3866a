"""The command-line programs of ``mine-duel`` (replay, simulate, verify): the only I/O in ``shared/``."""
