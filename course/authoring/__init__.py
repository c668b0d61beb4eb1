"""Authoring the course: build, references, filled and mutated notebooks, the demo and the
benchmarks."""
