"""Helpers the tests share: not tests themselves (pytest collects nothing here)."""
