"""SGLang's real code on a CPU: the pinned environment it runs in (see :mod:`.environment`)."""
