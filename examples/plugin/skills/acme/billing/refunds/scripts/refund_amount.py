#!/usr/bin/env python3
"""Pro-rata refund for the unused days of a billing period.

Amounts are handled as exact decimals and rounded half-up to cents, the way
Acme's billing system rounds, so the reply matches the refund the customer
actually receives.
"""

import argparse
from decimal import ROUND_HALF_UP, Decimal


def refund_amount(paid: Decimal, period_days: int, unused_days: int) -> Decimal:
    if period_days <= 0:
        raise ValueError("period_days must be positive")
    if not 0 <= unused_days <= period_days:
        raise ValueError("unused_days must be between 0 and period_days")
    raw = paid * Decimal(unused_days) / Decimal(period_days)
    return raw.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paid", type=Decimal, required=True, help="amount paid for the period")
    parser.add_argument("--period-days", type=int, required=True, help="length of the billing period in days")
    parser.add_argument("--unused-days", type=int, required=True, help="days left in the period when cancelled")
    args = parser.parse_args()
    print(refund_amount(args.paid, args.period_days, args.unused_days))


if __name__ == "__main__":
    main()
