// One side (producer or consumer) of the Java client in the throughput benchmark, in its own
// process: the same work and the same output as benchmarks/throughput_client.py. Produces
// --records records whose values cycle through the --payload-file's --size-byte values (no
// key, linger 5 ms, --acks 1 or all with idempotence, --compression) to --topic, or consumes --records records of it from the
// earliest offset (assign mode, no group, every value's length read). Prints "PROGRESS <n>"
// about twice a second and one "RESULT <json>" line: seconds, records/s, the process's CPU
// time per record over the timed part (every thread) and its peak RSS (VmHWM).
//
// Compiled by aiokafka_lead/bench/java.py against the kafka-clients jar the cluster
// harness provisions; nothing else is needed.

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class ThroughputClient {
    private static final long PROGRESS_EVERY_NANOS = 500_000_000L;
    private static long nextProgress = System.nanoTime() + PROGRESS_EVERY_NANOS;

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) {
            args.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
        }
        int records = Integer.parseInt(args.get("records"));
        String side = args.get("side");
        double[] timed = side.equals("produce") ? produce(args, records) : consume(args, records);
        double seconds = timed[0];
        double cpuSeconds = timed[1];
        System.out.printf(
                Locale.ROOT,
                "RESULT {\"client\": \"java\", \"side\": \"%s\", \"records\": %d, \"seconds\": %.6f, "
                        + "\"records_per_s\": %.3f, \"cpu_us_per_record\": %.6f, \"peak_rss_mib\": %.3f}%n",
                side, records, seconds, records / seconds, cpuSeconds / records * 1e6, peakRssMib());
        System.out.flush();
    }

    private static double[] produce(Map<String, String> args, int records) throws Exception {
        byte[] data = Files.readAllBytes(Path.of(args.get("payload-file")));
        int size = Integer.parseInt(args.get("size"));
        byte[][] values = new byte[data.length / size][];
        for (int v = 0; v < values.length; v++) {
            values[v] = java.util.Arrays.copyOfRange(data, v * size, (v + 1) * size);
        }
        String topic = args.get("topic");
        boolean all = args.getOrDefault("acks", "1").equals("all");
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args.get("bootstrap-server"));
        props.put(ProducerConfig.ACKS_CONFIG, all ? "all" : "1");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, Boolean.toString(all));
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, args.getOrDefault("compression", "none"));
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        AtomicLong failed = new AtomicLong();
        AtomicReference<Exception> firstError = new AtomicReference<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            producer.partitionsFor(topic);
            long started = System.nanoTime();
            long cpuStarted = processCpuNanos();
            for (int i = 0; i < records; i++) {
                producer.send(new ProducerRecord<>(topic, null, values[i % values.length]), (metadata, error) -> {
                    if (error != null) {
                        failed.incrementAndGet();
                        firstError.compareAndSet(null, error);
                    }
                });
                if ((i & 0x3FFF) == 0) {
                    progress(i);
                }
            }
            producer.flush();
            double seconds = (System.nanoTime() - started) / 1e9;
            double cpu = (processCpuNanos() - cpuStarted) / 1e9;
            if (failed.get() > 0) {
                throw new IllegalStateException(failed.get() + " records failed", firstError.get());
            }
            return new double[] {seconds, cpu};
        }
    }

    private static double[] consume(Map<String, String> args, int records) {
        String topic = args.get("topic");
        int partitions = Integer.parseInt(args.get("partitions"));
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args.get("bootstrap-server"));
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            List<TopicPartition> assigned = new ArrayList<>();
            for (int p = 0; p < partitions; p++) {
                assigned.add(new TopicPartition(topic, p));
            }
            consumer.assign(assigned);
            consumer.seekToBeginning(assigned);
            long started = System.nanoTime();
            long cpuStarted = processCpuNanos();
            long count = 0;
            long volume = 0;
            while (count < records) {
                ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofSeconds(1));
                for (ConsumerRecord<byte[], byte[]> record : batch) {
                    count++;
                    volume += record.value().length;
                }
                progress(count);
            }
            double seconds = (System.nanoTime() - started) / 1e9;
            double cpu = (processCpuNanos() - cpuStarted) / 1e9;
            if (volume < 0) {
                throw new IllegalStateException("unreachable: keeps the value reads");
            }
            return new double[] {seconds, cpu};
        }
    }

    private static void progress(long done) {
        long now = System.nanoTime();
        if (now >= nextProgress) {
            nextProgress = now + PROGRESS_EVERY_NANOS;
            System.out.println("PROGRESS " + done);
            System.out.flush();
        }
    }

    private static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    private static double peakRssMib() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmHWM:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024.0;
            }
        }
        return Double.NaN;
    }
}
