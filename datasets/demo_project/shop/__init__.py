"""A tiny shopping cart."""
