"""Watches: research that comes back on its own each period (docs/watches.md)."""
