"""The version neardup reports (``neardup --version``, every manifest it writes)."""

VERSION = "0.1.0"  # as pyproject.toml says
