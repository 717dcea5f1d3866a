"""Provable fairness (RULES.md §9): commitments, the match record and its pure verifier."""
