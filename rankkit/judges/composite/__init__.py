"""Judges made of judges: panels."""
