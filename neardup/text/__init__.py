"""neardup.text."""
