"""``ddlsched serve``: the live scheduler as a long-running service (docs/live.md, "Operating
the service"). Calls go one way, top to bottom::

    server   (Service: start-up, recovery, the loop's inbox)   ← cli
      ├─ httpapi (+ page, history)   the HTTP/JSON API (aiohttp); sees the service through ServiceView
      ├─ engine                      the engine that never runs out of jobs, committing first
      └─ store                       the durable state (SQLite)
    export, remote                   read a store / talk to a running service (clients)
"""
