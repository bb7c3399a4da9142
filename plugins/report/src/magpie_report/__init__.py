"""magpie's HTML reports: ``report.html`` for every run and ``magpie report PATH [PATH...]``."""
