"""The rules of RULES.md: board, engine, notation, events and what each seat may see. Pure."""
