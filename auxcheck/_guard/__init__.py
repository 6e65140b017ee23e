"""The live-server guard: auxcheck's checks inside a running SGLang, through its own plugin hooks."""
