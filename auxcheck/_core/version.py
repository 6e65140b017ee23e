"""The installed version of auxcheck."""

__version__ = "0.1.0"
