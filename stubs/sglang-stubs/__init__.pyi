from _typeshed import Incomplete

# SGLang's top-level package holds a large public API that these stubs do not
# describe; a module-level __getattr__ keeps it (and uncovered direct
# submodules) Any instead of making it an error.
def __getattr__(name: str) -> Incomplete: ...
