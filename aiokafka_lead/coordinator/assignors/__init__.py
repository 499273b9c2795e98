"""aiokafka's assignor modules: ``abstract`` (the base class of aiokafka-style assignors),
``range``, ``roundrobin`` and ``sticky``. Pass the classes in
``partition_assignment_strategy``, as with aiokafka."""
