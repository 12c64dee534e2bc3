"""Backends: one engine set-up per kind of job (docs/design.md "Backends")."""

from .base import Backend
from .registry import all_backends, pick_backend, register_backend, unregister_backend

__all__ = ["Backend", "all_backends", "pick_backend", "register_backend", "unregister_backend"]
