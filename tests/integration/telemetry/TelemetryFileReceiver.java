import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.telemetry.ClientTelemetry;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;
import org.apache.kafka.server.telemetry.ClientTelemetryReceiver;

/**
 * A broker's client telemetry receiver (KIP-714) for tests: every push becomes one line of
 * the file named by the system property aiokafka.telemetry.file, tab-separated: the time it
 * arrived (ms since the epoch), client instance id, terminating, client id, content type,
 * the payload (OTLP MetricsData, as the broker hands it over) in base64.
 */
public class TelemetryFileReceiver implements MetricsReporter, ClientTelemetry, ClientTelemetryReceiver {
    private final String path = System.getProperty("aiokafka.telemetry.file");

    @Override
    public void configure(Map<String, ?> configs) {}

    @Override
    public void init(List<KafkaMetric> metrics) {}

    @Override
    public void metricChange(KafkaMetric metric) {}

    @Override
    public void metricRemoval(KafkaMetric metric) {}

    @Override
    public void close() {}

    @Override
    public ClientTelemetryReceiver clientReceiver() {
        return this;
    }

    @Override
    public synchronized void exportMetrics(AuthorizableRequestContext context, ClientTelemetryPayload payload) {
        ByteBuffer data = payload.data().duplicate();
        byte[] bytes = new byte[data.remaining()];
        data.get(bytes);
        String line = String.join("\t",
            Long.toString(System.currentTimeMillis()),
            payload.clientInstanceId().toString(),
            Boolean.toString(payload.isTerminating()),
            String.valueOf(context.clientId()),
            payload.contentType(),
            Base64.getEncoder().encodeToString(bytes)) + "\n";
        try (FileOutputStream out = new FileOutputStream(path, true)) {
            out.write(line.getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }
}
