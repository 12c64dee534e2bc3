"""Scheduling policies as composable parts (SPEC §5) and the registry of named presets."""
