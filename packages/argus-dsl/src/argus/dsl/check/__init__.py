"""The static tag checker."""
