"""Players that see only a seat's view: the CPU levels (AI1–AI6) and a uniform random player. Pure."""
