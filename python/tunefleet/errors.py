"""Errors of the tunefleet package: one exception class per canonical code.

Every failure a Client call or a BestTable lookup reports is a
`tunefleet.Error` whose `code` is the canonical gRPC status code (a
`StatusCode`, the same numbers gRPC uses) and whose `message` is the
server's text, unchanged. Catch a subclass to act on one code:

    try:
        client.job(job_id)
    except tunefleet.NotFoundError:
        ...

What the caller should do next follows the code: UNAVAILABLE retry the
call; DEADLINE_EXCEEDED retry with a longer deadline; INVALID_ARGUMENT and
NOT_FOUND fix the request; UNAUTHENTICATED and PERMISSION_DENIED fix the
token. This module imports nothing beyond the standard library.
"""

from __future__ import annotations

import enum


class StatusCode(enum.IntEnum):
    """The canonical status codes, numbered as gRPC numbers them."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16


class Error(Exception):
    """A failed tunefleet call: `code` (a StatusCode) and `message`."""

    code = StatusCode.UNKNOWN

    def __init__(self, message: str, code: StatusCode | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"


class CancelledError(Error):
    code = StatusCode.CANCELLED


class InvalidArgumentError(Error):
    code = StatusCode.INVALID_ARGUMENT


class DeadlineExceededError(Error):
    code = StatusCode.DEADLINE_EXCEEDED


class NotFoundError(Error):
    code = StatusCode.NOT_FOUND


class AlreadyExistsError(Error):
    code = StatusCode.ALREADY_EXISTS


class PermissionDeniedError(Error):
    code = StatusCode.PERMISSION_DENIED


class ResourceExhaustedError(Error):
    code = StatusCode.RESOURCE_EXHAUSTED


class FailedPreconditionError(Error):
    code = StatusCode.FAILED_PRECONDITION


class AbortedError(Error):
    code = StatusCode.ABORTED


class UnimplementedError(Error):
    code = StatusCode.UNIMPLEMENTED


class InternalError(Error):
    code = StatusCode.INTERNAL


class UnavailableError(Error):
    code = StatusCode.UNAVAILABLE


class UnauthenticatedError(Error):
    code = StatusCode.UNAUTHENTICATED


_CLASSES = {
    cls.code: cls
    for cls in (CancelledError, InvalidArgumentError, DeadlineExceededError,
                NotFoundError, AlreadyExistsError, PermissionDeniedError,
                ResourceExhaustedError, FailedPreconditionError, AbortedError,
                UnimplementedError, InternalError, UnavailableError,
                UnauthenticatedError)
}


def error_for(code: StatusCode | int | str, message: str) -> Error:
    """The exception for a canonical code (given as a StatusCode, its number
    or its name); codes without a class of their own give a plain Error."""
    if isinstance(code, str):
        code = StatusCode[code]
    code = StatusCode(code)
    cls = _CLASSES.get(code)
    return cls(message) if cls is not None else Error(message, code)


__all__ = [
    "StatusCode", "Error", "error_for", "CancelledError", "InvalidArgumentError",
    "DeadlineExceededError", "NotFoundError", "AlreadyExistsError",
    "PermissionDeniedError", "ResourceExhaustedError", "FailedPreconditionError",
    "AbortedError", "UnimplementedError", "InternalError", "UnavailableError",
    "UnauthenticatedError",
]
