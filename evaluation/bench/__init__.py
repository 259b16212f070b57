"""Benchmarks: speed of the streams (and later the models) against MOA, on this machine."""

from __future__ import annotations
