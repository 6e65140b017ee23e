"""The base every capability builds on: guarded calls into plugin code, naming, text, safe paths, one reader per format, signatures. Imports nothing of auxcheck above it."""
