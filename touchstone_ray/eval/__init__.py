"""The eval phase: expand the matrix, run it pinned on Ray, write the bundle (SPEC §7, §8)."""
