"""Pieces shared across Mirage's modules."""
