#!/usr/bin/env python3
"""lz4.py RAW OUT: rewrites a fatbin of uncompressed entries (nvcc
--no-compress) with every payload an LZ4 block, as nvcc 12 stores the
payloads it compresses: flag 0x2000 in the entry's flags (u64 at 40), the
block's size at 16 (u32), the uncompressed size at 56 (u64), the payload
padded to 8 bytes. A PTX payload is compressed up to and including its
first NUL. Compresses with the system's liblz4.so.1 (LZ4_compress_default)."""
import ctypes
import struct
import sys

lz4 = ctypes.CDLL("liblz4.so.1")


def compress(data):
    cap = lz4.LZ4_compressBound(len(data))
    out = ctypes.create_string_buffer(cap)
    n = lz4.LZ4_compress_default(data, out, len(data), cap)
    if n <= 0:
        sys.exit("LZ4_compress_default failed")
    return out.raw[:n]


def main(raw, dst):
    b = open(raw, "rb").read()
    magic, version, hs, fat = struct.unpack_from("<IHHQ", b, 0)
    if magic != 0xBA55ED50:
        sys.exit(raw + ": not a fatbin")
    p, end, body = hs, hs + fat, bytearray()
    while p + 64 <= end:
        kind = struct.unpack_from("<H", b, p)[0]
        ehs, size = struct.unpack_from("<IQ", b, p + 4)
        flags = struct.unpack_from("<Q", b, p + 40)[0]
        if flags & 0xA000:
            sys.exit(raw + ": an entry is compressed already")
        payload = b[p + ehs:p + ehs + size]
        if kind == 1 and b"\0" in payload:
            payload = payload[:payload.index(b"\0") + 1]
        c = compress(payload)
        h = bytearray(b[p:p + ehs])
        padded = c + b"\0" * (-len(c) % 8)
        struct.pack_into("<Q", h, 8, len(padded))
        struct.pack_into("<I", h, 16, len(c))
        struct.pack_into("<Q", h, 40, flags | 0x2000)
        struct.pack_into("<Q", h, 56, len(payload))
        body += h + padded
        p += ehs + size
    head = bytearray(b[:hs])
    struct.pack_into("<Q", head, 8, len(body))
    open(dst, "wb").write(head + body)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: lz4.py RAW OUT")
    main(sys.argv[1], sys.argv[2])
