"""The machine as the vendor plugins see it: its GPUs (:mod:`.gpus`), their clocks and power (:mod:`.hardware`)."""
