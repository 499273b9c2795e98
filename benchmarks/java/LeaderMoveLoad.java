// One Java client of the leader-move benchmark: the same schedule and measurement as the
// Python clients (aiokafka_lead/bench/load.py). Record i is scheduled at start + i / rate;
// its latency runs from that time to the acknowledgement; the time send() blocked is kept
// beside it. Warms up first (unmeasured), prints "GO <wall-clock seconds>", then writes the
// samples as JSON (the shape of aiokafka_lead.bench.stats.Samples) to --out.
//
// Compiled by aiokafka_lead/bench/java.py against the kafka-clients jar the cluster
// harness provisions; nothing else is needed.

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Random;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class LeaderMoveLoad {
    private static final long TICK_MS = 2;

    private static final class Run {
        final double rate;
        final int total;
        final double[] latencyMs;
        final double[] blockedMs;
        long startNanos;
        double startWall;

        Run(double rate, double durationS) {
            this.rate = rate;
            this.total = (int) (rate * durationS);
            this.latencyMs = new double[total];
            this.blockedMs = new double[total];
            java.util.Arrays.fill(latencyMs, Double.NaN);
        }

        long scheduledNanos(int i) {
            return startNanos + (long) (i * 1e9 / rate);
        }
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) {
            args.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
        }
        String topic = args.get("topic");
        double rate = Double.parseDouble(args.getOrDefault("rate", "2000"));
        byte[] payload = new byte[Integer.parseInt(args.getOrDefault("size", "1024"))];
        new Random().nextBytes(payload);

        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args.get("bootstrap-server"));
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        Run run;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            producer.partitionsFor(topic);
            paced(producer, topic, payload, new Run(rate, Double.parseDouble(args.getOrDefault("warmup", "5"))));
            System.out.printf("GO %.6f%n", System.currentTimeMillis() / 1000.0);
            System.out.flush();
            run = new Run(rate, Double.parseDouble(args.getOrDefault("duration", "60")));
            paced(producer, topic, payload, run);
        }
        write(Path.of(args.get("out")), args.getOrDefault("label", "Java client"), run);
    }

    private static void paced(KafkaProducer<byte[], byte[]> producer, String topic, byte[] payload, Run run)
            throws InterruptedException {
        run.startWall = System.currentTimeMillis() / 1000.0;
        run.startNanos = System.nanoTime();
        int next = 0;
        while (next < run.total) {
            long elapsed = System.nanoTime() - run.startNanos;
            int due = (int) Math.min(run.total, (long) (elapsed / 1e9 * run.rate) + 1);
            for (; next < due; next++) {
                final int index = next;
                byte[] key = Integer.toString(index).getBytes(StandardCharsets.UTF_8);
                long began = System.nanoTime();
                producer.send(new ProducerRecord<>(topic, key, payload), (metadata, error) -> {
                    if (error == null) {
                        run.latencyMs[index] = (System.nanoTime() - run.scheduledNanos(index)) / 1e6;
                    }
                });
                run.blockedMs[index] = (System.nanoTime() - began) / 1e6;
            }
            Thread.sleep(TICK_MS);
        }
        producer.flush();
    }

    private static void write(Path out, String label, Run run) throws IOException {
        StringBuilder json = new StringBuilder(run.total * 40);
        json.append("{\"client\": \"").append(label.replace("\"", "'")).append("\", \"scheduled_at\": [");
        for (int i = 0; i < run.total; i++) {
            json.append(i == 0 ? "" : ",").append(String.format(Locale.ROOT, "%.6f", run.startWall + i / run.rate));
        }
        json.append("], \"latency_ms\": [");
        for (int i = 0; i < run.total; i++) {
            double v = run.latencyMs[i];
            json.append(i == 0 ? "" : ",").append(Double.isNaN(v) ? "null" : String.format(Locale.ROOT, "%.3f", v));
        }
        json.append("], \"blocked_ms\": [");
        for (int i = 0; i < run.total; i++) {
            json.append(i == 0 ? "" : ",").append(String.format(Locale.ROOT, "%.3f", run.blockedMs[i]));
        }
        json.append("], \"moves\": [], \"extra\": {\"version\": \"")
            .append(clientsVersion()).append("\"}}");
        Files.writeString(out, json.toString());
    }

    /** The kafka-clients version, from the properties file the jar carries. */
    static String clientsVersion() throws IOException {
        Properties props = new Properties();
        try (var in = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in != null) {
                props.load(in);
            }
        }
        return props.getProperty("version", "unknown");
    }
}
