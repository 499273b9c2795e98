// A share-group member for the interop test and the share-group benchmark.
//
//   java ShareConsumerLoad BOOTSTRAP TOPIC GROUP MODE IDLE_MS MAX_MS [barrier]
//
// With "barrier" it subscribes, polls once without waiting (that joins the group), prints
// "READY" and waits for a line on stdin (the benchmark starts every member at once).
// MODE "explicit": acknowledges each record ACCEPT, commitSync() after each poll, and
// prints "ACCEPTED <partition> <offset> <deliveryCount>" for every record whose commit
// succeeded. MODE "implicit": implicit acknowledgement, prints nothing per record.
// Either way it stops once IDLE_MS pass without records (after the first one) or MAX_MS
// in all, closes the consumer, and prints "DONE <records> <first ns> <last ns>"
// (System.nanoTime() of the first and last record, for rates across processes use the
// wall-clock "WALL <first ms> <last ms>" line after it), then "LATENCY <ms> <ms> ..." (per
// record, the wall-clock ms from its timestamp to its delivery to this member).
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ShareConsumerLoad {
    public static void main(String[] args) throws IOException {
        String bootstrap = args[0], topic = args[1], group = args[2], mode = args[3];
        long idleMs = Long.parseLong(args[4]), maxMs = Long.parseLong(args[5]);
        boolean explicit = mode.equals("explicit");
        boolean barrier = args.length > 6 && args[6].equals("barrier");
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("client.id", "java-share-" + ProcessHandle.current().pid());
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        props.put("share.acknowledgement.mode", explicit ? "explicit" : "implicit");
        long count = 0, firstNs = 0, lastNs = 0, firstMs = 0, lastMs = 0;
        long start = System.nanoTime();
        StringBuilder latencies = new StringBuilder("LATENCY");
        try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            if (barrier) {
                // a share consumer joins its group on its first poll: one that returns at once
                count += consumer.poll(Duration.ZERO).count();
                System.out.println("READY");
                System.out.flush();
                new BufferedReader(new InputStreamReader(System.in)).readLine();
                start = System.nanoTime();
            }
            while (true) {
                long now = System.nanoTime();
                if ((now - start) / 1_000_000 > maxMs) break;
                if (count > 0 && (now - lastNs) / 1_000_000 > idleMs) break;
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
                if (records.isEmpty()) continue;
                List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
                long deliveredMs = System.currentTimeMillis();
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    got.add(r);
                    latencies.append(' ').append(deliveredMs - r.timestamp());
                    if (explicit) consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                if (count == 0) {
                    firstNs = System.nanoTime();
                    firstMs = System.currentTimeMillis();
                }
                count += got.size();
                lastNs = System.nanoTime();
                lastMs = System.currentTimeMillis();
                if (explicit) {
                    Map<TopicIdPartition, Optional<KafkaException>> results = consumer.commitSync();
                    StringBuilder out = new StringBuilder();
                    for (ConsumerRecord<byte[], byte[]> r : got) {
                        boolean ok = results.entrySet().stream().anyMatch(
                            e -> e.getKey().partition() == r.partition() && e.getValue().isEmpty());
                        if (ok) {
                            out.append("ACCEPTED ").append(r.partition()).append(' ')
                               .append(r.offset()).append(' ')
                               .append(r.deliveryCount().orElse((short) -1)).append('\n');
                        }
                    }
                    System.out.print(out);
                    System.out.flush();
                }
            }
        }
        System.out.println("DONE " + count + " " + firstNs + " " + lastNs);
        System.out.println("WALL " + count + " " + firstMs + " " + lastMs);
        System.out.println(latencies);
        System.out.flush();
    }
}
