"""A concurrent GPU hog: another process multiplying large matrices on the same GPU until stopped.

python benchmarks/gpu_hog.py --seconds 600 &   # stops by itself after --seconds
"""

from __future__ import annotations

import argparse
import time

import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--n", type=int, default=8192)
    args = parser.parse_args()
    a = torch.randn(args.n, args.n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(args.n, args.n, device="cuda", dtype=torch.bfloat16)
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        for _ in range(20):
            a @ b
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
