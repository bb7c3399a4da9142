"""Runtime: child processes, interrupts, run folders, thread pools."""
