"""mirage package."""
