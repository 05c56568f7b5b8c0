"""Input cleaning on 8 MiB of adversarial text, beside 8 MiB of ordinary prose.

The baseline is the same `clean_value` on an 8 MiB report of plain sentences with
a few addresses; the adversarial inputs are built to make a backtracking e-mail
pattern quadratic (a line of dots, ``a``x4 MiB ``@`` ``b``x4 MiB, ``a.`` repeated).
"""

from __future__ import annotations

import time

from heinzel.engine.clean import clean_value
from ledger.redact import redact

MIB = 1024 * 1024
PROSE = "Shipped the checkout fix with priya@acme.test; PayPal is next week.\n"
INPUTS = {
    "dots": "." * (8 * MIB),
    "a x4MiB @ b x4MiB": "a" * (4 * MIB) + "@" + "b" * (4 * MIB),
    "a. repeated": "a." * (4 * MIB),
}


def timed(text: str) -> float:
    start = time.perf_counter()
    clean_value(text)
    redact(text)
    return time.perf_counter() - start


def main() -> None:
    baseline = timed(PROSE * (8 * MIB // len(PROSE)))
    print(f"8 MiB of prose (baseline): {baseline:7.2f} s")
    for name, text in INPUTS.items():
        took = timed(text)
        print(f"8 MiB {name:<20} {took:7.2f} s  ({took / baseline:5.2f}x the baseline)")


if __name__ == "__main__":
    main()
