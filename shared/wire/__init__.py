"""The wire protocol of docs/PROTOCOL.md: typed messages and the one codec that reads and writes them."""
