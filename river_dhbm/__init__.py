"""Deep hybrid semi-supervised learners (Ororbia, Giles & Reitter, 2016) for River."""

from __future__ import annotations

__all__: list[str] = []
