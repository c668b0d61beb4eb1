"""Authoring the course: build, references, scratch courses, the demo and the benchmarks."""
