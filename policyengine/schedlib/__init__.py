"""schedlib layer."""
