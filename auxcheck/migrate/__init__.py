"""The import-migration engine for names SGLang moved (``auxcheck migrate``)."""
