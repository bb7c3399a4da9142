"""AMD Magpie's latency protocol for testcase commands (:mod:`magpie_testcase_latency.protocol`)."""
