"""Core domain model and the event-driven engine."""
