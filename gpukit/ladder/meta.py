"""The ladder chapter's name (no heavy imports)."""

NAME = "ladder"
