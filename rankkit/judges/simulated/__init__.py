"""Simulated and recorded judges: calibrated simulators, synthetic tasks, replay of recordings."""
