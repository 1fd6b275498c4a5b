"""neardup._core."""
