"""Child processes with timeouts that run plugin code without letting it crash, hang or silence the checker."""
