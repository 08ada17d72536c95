"""controller layer."""
