"""Judgment values, the memo that asks for each judgment once, and the cache that keeps them."""
