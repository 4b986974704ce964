"""Varint-delimited protobuf frames over file descriptors: the framing of
worker/child_protocol.h (the byte length as a base-128 varint, then the
serialized message)."""

import os

MAX_FRAME_BYTES = 256 << 20


class ProtocolError(Exception):
    """An unreadable frame: too large, truncated or not parseable."""


def _read_exact(fd, count):
    chunks = []
    while count > 0:
        chunk = os.read(fd, count)
        if not chunk:
            return None
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


def read_message(fd, message):
    """Fills `message` from the next frame on `fd`; False at a clean EOF."""
    length = 0
    shift = 0
    while True:
        byte = os.read(fd, 1)
        if not byte:
            if shift == 0:
                return False
            raise ProtocolError("EOF inside a frame length")
        length |= (byte[0] & 0x7F) << shift
        shift += 7
        if not byte[0] & 0x80:
            break
        if shift > 63:
            raise ProtocolError("frame length varint too long")
    if length > MAX_FRAME_BYTES:
        raise ProtocolError("frame of %d bytes is too large" % length)
    body = _read_exact(fd, length)
    if body is None:
        raise ProtocolError("EOF inside a frame")
    message.ParseFromString(body)
    return True


def write_message(fd, message):
    body = message.SerializeToString()
    length = len(body)
    header = bytearray()
    while True:
        byte = length & 0x7F
        length >>= 7
        if length:
            header.append(byte | 0x80)
        else:
            header.append(byte)
            break
    data = bytes(header) + body
    while data:
        written = os.write(fd, data)
        data = data[written:]
