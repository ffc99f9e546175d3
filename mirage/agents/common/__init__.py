"""Pieces shared by Mirage's agents: the decision interface and SB3 model plumbing."""
