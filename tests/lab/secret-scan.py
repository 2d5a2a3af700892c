#!/usr/bin/env python3
"""secret-scan.py SECRET_FILE PATH... : is any part of a secret in these files?

Looks for the secret as raw bytes, as hex (either case) and as base64 at
each of the three byte alignments, taking 16-byte windows from its start,
middle and end so a partial leak is found too. Directories are walked.
Prints each hit ("FOUND base64 of bytes 0..16 in FILE") and exits 1; else
prints how many files it read and exits 0.
"""
import base64
import os
import sys


def forms(secret: bytes):
    step = 16
    starts = sorted({0, max(0, len(secret) // 2 - step // 2), max(0, len(secret) - step)})
    for start in starts:
        window = secret[start:start + step]
        where = f"bytes {start}..{start + len(window)}"
        yield f"raw {where}", window
        yield f"hex {where}", window.hex().encode()
        yield f"HEX {where}", window.hex().upper().encode()
    for shift in range(3):  # base64 of a larger blob holding the secret at any offset
        encoded = base64.b64encode(secret[shift:shift + 24])
        yield f"base64 of bytes {shift}..{shift + 24}", encoded[:32]


def files(paths):
    for path in paths:
        if os.path.isdir(path):
            for root, _, names in os.walk(path):
                for name in names:
                    yield os.path.join(root, name)
        elif os.path.exists(path):
            yield path


def main() -> int:
    secret = open(sys.argv[1], "rb").read()
    if len(secret) < 16:
        print(f"{sys.argv[1]}: a secret of {len(secret)} bytes is too short to look for")
        return 2
    patterns = list(forms(secret))
    hits = read = 0
    for path in files(sys.argv[2:]):
        try:
            data = open(path, "rb").read()
        except OSError:
            continue
        read += 1
        for name, pattern in patterns:
            if pattern in data:
                print(f"FOUND {name} in {path}")
                hits += 1
    if hits:
        return 1
    print(f"not found in {read} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
