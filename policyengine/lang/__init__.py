"""lang layer."""
