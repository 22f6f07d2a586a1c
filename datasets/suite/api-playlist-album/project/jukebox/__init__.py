"""A tiny jukebox queue."""
