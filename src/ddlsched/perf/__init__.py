"""Performance models: how long compute and communication take (SPEC §3)."""
