"""SGLang releases read without installing them: the release index, the plugin scan, the release check, moves inference, stubcheck."""
