"""The CPU model of SGLang: requests and commits, the step loop as the scheduler runs it, the consume witness, tensor walks and byte ranges, recording doubles."""
