"""aiokafka's ``sticky`` package: the eager sticky assignor lives in ``sticky_assignor``."""
