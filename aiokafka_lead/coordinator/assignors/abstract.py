"""aiokafka's path of the assignor base class (defined in
:mod:`aiokafka_lead.consumer.assignor_base`)."""

from aiokafka_lead.consumer.assignor_base import AbstractPartitionAssignor, AssignmentCluster

__all__ = ["AbstractPartitionAssignor", "AssignmentCluster"]
