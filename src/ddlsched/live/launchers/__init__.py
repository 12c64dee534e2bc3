"""The cluster layer of live mode: what a worker process is and what every launcher offers the
scheduler (``base``), plain subprocesses on this machine (``local``) and a Ray cluster
(``ray``). The scheduler (``live.executor``) calls down into them; they call nothing above."""
