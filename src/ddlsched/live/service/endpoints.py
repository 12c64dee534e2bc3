"""Where the live service listens and its clients look by default (no imports: the CLI reads
these while it builds its parser)."""

#: ``ddlsched serve``'s default ``--listen``
DEFAULT_LISTEN = "127.0.0.1:8470"
#: the clients' default ``--server`` (or $DDLSCHED_SERVER)
DEFAULT_SERVER = "http://127.0.0.1:8470"
