"""Exceptions of the hbird client.

Every error the server reports comes back as an hbird.Error (or one of its
subclasses below) carrying the server's SQLSTATE, primary message, detail
and hint; the driver's own exception (psycopg or psycopg2) is kept as
__cause__.  Errors found before anything is sent (an object the client
cannot turn into model bytes, a missing file) are ordinary Python
exceptions (TypeError, OSError), not these.
"""


class Error(Exception):
    """An error reported by the server, with its SQLSTATE.

    sqlstate is None only for the few conditions the client itself
    detects about the database (hbird not installed in it).
    """

    def __init__(self, message, sqlstate=None, detail=None, hint=None):
        super().__init__(message)
        self.message = message
        self.sqlstate = sqlstate
        self.detail = detail
        self.hint = hint

    def __str__(self):
        s = self.message
        if self.sqlstate:
            s += " (SQLSTATE %s)" % self.sqlstate
        if self.detail:
            s += "\nDETAIL: " + self.detail
        if self.hint:
            s += "\nHINT: " + self.hint
        return s


class PrivilegeError(Error):
    """42501: the role may not do this (run the function, change the model)."""


class NotFoundError(Error):
    """42704: no such model, version or role (or no hbird in the database)."""


class DataError(Error):
    """Class 22: the model bytes or an argument are invalid (22P02: the bytes
    are not the format they claim to be; 22023: a meaningless model or
    argument)."""


class NotSupportedError(Error):
    """0A000: a valid model that uses something hbird does not support."""


class LimitError(Error):
    """Class 54: beyond a limit (hbird.max_model_bytes, depth, size)."""


_BY_STATE = {
    "42501": PrivilegeError,
    "42704": NotFoundError,
    "0A000": NotSupportedError,
}
_BY_CLASS = {
    "22": DataError,
    "54": LimitError,
}


def error_class(sqlstate):
    """The exception class for a SQLSTATE: by the exact code, then by class."""
    if not sqlstate:
        return Error
    return _BY_STATE.get(sqlstate) or _BY_CLASS.get(sqlstate[:2]) or Error
