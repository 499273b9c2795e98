"""aiokafka's ``coordinator`` package: the shapes and base class of client-side partition
assignors (``protocol``, ``assignors``). The classic group protocol itself runs in
:mod:`aiokafka_lead.consumer.coordinator`."""
