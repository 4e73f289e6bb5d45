"""Hosted APIs: OpenAI-compatible servers and Anthropic, with batching, pacing and prices."""
