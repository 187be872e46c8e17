"""The one exception type that the command line reports as a one-line error."""


class EditspecError(Exception):
    """A user-facing failure: bad input, missing file, incompatible model."""
