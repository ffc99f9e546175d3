"""themis package."""
