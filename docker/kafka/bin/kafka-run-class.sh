#!/usr/bin/env bash
# Runs a Kafka main class with the image's jars: kafka-run-class.sh CLASS [ARGS...].
# The kafka-*.sh commands next to it are links to this script, named as in Kafka's bin/.
set -euo pipefail
case "$(basename "$0")" in
  kafka-topics.sh) main=org.apache.kafka.tools.TopicCommand ;;
  kafka-storage.sh) main=kafka.tools.StorageTool ;;
  kafka-metadata-quorum.sh) main=org.apache.kafka.tools.MetadataQuorumCommand ;;
  kafka-leader-election.sh) main=org.apache.kafka.tools.LeaderElectionCommand ;;
  kafka-reassign-partitions.sh) main=org.apache.kafka.tools.reassign.ReassignPartitionsCommand ;;
  kafka-consumer-groups.sh) main=org.apache.kafka.tools.consumer.group.ConsumerGroupCommand ;;
  kafka-console-producer.sh) main=org.apache.kafka.tools.ConsoleProducer ;;
  kafka-console-consumer.sh) main=org.apache.kafka.tools.consumer.ConsoleConsumer ;;
  kafka-get-offsets.sh) main=org.apache.kafka.tools.GetOffsetShell ;;
  *) main=$1; shift ;;
esac
# shellcheck disable=SC2086
exec java ${KAFKA_TOOL_OPTS:--Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1} \
  -Dlog4j2.configurationFile=/etc/kafka/docker/tools-log4j2.yaml \
  -cp "/opt/kafka/libs/*" "$main" "$@"
