"""The client side of ``ddlsched serve``: what ``ddlsched submit/status/cancel/drain`` send
(standard library ``urllib`` only). A refusal by the service or an unreachable one is one
:class:`~ddlsched.errors.InputError` line naming the server."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any

from ...errors import InputError
from ..jobfile import LiveJob
from .endpoints import DEFAULT_SERVER, token_for

__all__ = ["DEFAULT_SERVER", "ServiceClient", "job_payload"]


def job_payload(job: LiveJob) -> dict[str, Any]:
    """A job as ``POST /jobs`` takes it (the fields a job file gives, ids left to the service)."""
    doc: dict[str, Any] = {"arrival": job.arrival, "gpus": job.gpus, "command": list(job.command),
                           "max_restarts": job.max_restarts}  # fmt: skip
    for name in ("app", "checkpoint_dir", "duration", "batch_size", "name", "queue", "priority"):
        value = getattr(job, name)
        if value is not None and value != "":
            doc[name] = value
    return doc


#: a long submission goes in chunks of at most this much JSON (the service reads at most
#: 1 MiB per request) and this many jobs
SUBMIT_CHUNK_BYTES = 768 << 10
SUBMIT_CHUNK_JOBS = 2000


class ServiceClient:
    """Calls on one service: ``server`` (default $DDLSCHED_SERVER or :data:`DEFAULT_SERVER`),
    ``token`` when the service needs one."""

    def __init__(self, server: str | None = None, token: str | None = None,
                 timeout: float = 30.0) -> None:  # fmt: skip
        self.server = (server or os.environ.get("DDLSCHED_SERVER") or DEFAULT_SERVER).rstrip("/")
        if not self.server.startswith(("http://", "https://")):
            raise InputError(f"expected a URL such as {DEFAULT_SERVER}, got {self.server!r}",
                             field="--server")  # fmt: skip
        # no token given: $DDLSCHED_TOKEN, else the one a service of this user left for
        # this URL (``endpoints.runtime_file``)
        self.token = token or os.environ.get("DDLSCHED_TOKEN") or token_for(self.server)
        self.timeout = timeout

    def call(self, method: str, path: str, body: object = None) -> tuple[int, Any]:
        """``(status, decoded JSON)``; InputError for a refusal (4xx/5xx) or no service."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.server + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310
                return resp.status, _decode(resp.read())
        except urllib.error.HTTPError as e:
            doc = _decode(e.read())
            text = doc.get("error") if isinstance(doc, dict) else None
            raise InputError(f"{e.code}: {text or e.reason}", source=self.server) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise InputError(f"no ddlsched service answers ({reason}); is `ddlsched serve` "
                             "running there?", source=self.server) from None  # fmt: skip

    def submit(self, jobs: list[LiveJob]) -> list[int]:
        """Submit ``jobs``, all or none; their ids, in the jobs' order. A long job file goes
        in chunks (``SUBMIT_CHUNK_BYTES`` of JSON, at most ``SUBMIT_CHUNK_JOBS`` jobs each,
        under the service's body limit); if a chunk is refused, the jobs of the chunks
        before it are cancelled again and the error names the jobs it refused."""
        chunks: list[list[dict[str, Any]]] = [[]]
        size = 0
        for j in jobs:
            doc = job_payload(j)
            n = len(json.dumps(doc)) + 2
            if chunks[-1] and (
                size + n > SUBMIT_CHUNK_BYTES or len(chunks[-1]) >= SUBMIT_CHUNK_JOBS
            ):
                chunks.append([])
                size = 0
            chunks[-1].append(doc)
            size += n
        ids: list[int] = []
        for chunk in chunks:
            try:
                _, doc = self.call("POST", "/jobs", {"jobs": chunk})
            except InputError as e:
                for job_id in ids:  # all or none: take back what was accepted
                    try:
                        self.cancel(job_id)
                    except InputError:
                        pass
                if len(chunks) == 1:
                    raise
                first = len(ids)
                raise InputError(
                    f"jobs {first}–{first + len(chunk) - 1} of the file were refused ({e}); "
                    f"the {len(ids)} submitted before them were cancelled",
                    source=self.server,
                ) from None
            ids.extend(doc["ids"])
        return ids

    def jobs(self, states: list[str] | None = None) -> list[dict[str, Any]]:
        path = "/jobs" + (f"?state={','.join(states)}" if states else "")
        return list(self.call("GET", path)[1]["jobs"])

    def job(self, job_id: int) -> dict[str, Any]:
        return dict(self.call("GET", f"/jobs/{int(job_id)}")[1])

    def why(self, job_id: int) -> list[str]:
        """Why a job is where it is (pending: the quota layer's reasons), one line each."""
        return list(self.call("GET", f"/jobs/{int(job_id)}/why")[1]["why"])

    def cancel(self, job_id: int) -> dict[str, Any]:
        return dict(self.call("DELETE", f"/jobs/{int(job_id)}")[1])

    def drain(self) -> dict[str, Any]:
        return dict(self.call("POST", "/drain", {})[1])

    def health(self) -> dict[str, Any]:
        return dict(self.call("GET", "/health")[1])


def _decode(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except ValueError:
        return None
