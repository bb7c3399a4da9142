"""magpie trace analyzer ``inference``: stage split, steady-state window and per-op roofline."""
