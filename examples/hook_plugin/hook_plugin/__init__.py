"""A hook-based SGLang plugin with the signature breaks public plugins have (see hooks.py)."""
