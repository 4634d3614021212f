"""Reading scores: the public surface of :mod:`engine.canonical` (the score tensor) and :mod:`engine.readers`.

Kept so that ``engine.io.open_scores``, ``engine.io.read_sidecar`` and the other
names below stay where they were; new code imports them from
:mod:`engine.canonical` (construction, validation, sidecars) or
:mod:`engine.readers` (the reader registry and :func:`open_scores`).
"""

from __future__ import annotations

from .canonical import (
                        apply_sidecar,
                        check_sidecar,
                        defaulted_directions,
                        directions_note,
                        is_url,
                        left_out_judges,
                        read_sidecar,
                        scores_from_array,
                        sidecar_path,
                        validate_scores,
)
from .readers import default_sidecar, open_scores
from .readers.common import reading_text
from .readers.tables import MISSING_TOKENS, instance_labels, is_long_header

__all__ = ["MISSING_TOKENS", "apply_sidecar", "check_sidecar", "default_sidecar", "defaulted_directions", "directions_note",
           "instance_labels", "is_long_header", "is_url", "left_out_judges", "open_scores", "read_sidecar", "reading_text",
           "scores_from_array", "sidecar_path", "validate_scores"]
