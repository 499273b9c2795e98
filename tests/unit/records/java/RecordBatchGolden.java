/*
 * The Java client's bytes for tests/unit/records/test_golden.py (JAVA_BATCHES): magic v2
 * batches written by kafka-clients' MemoryRecordsBuilder, printed as "name hex" lines.
 * Not run by the tests; to regenerate (kafka-clients 3.8+ for its Compression class):
 *   CP=kafka-clients-3.9.2.jar:slf4j-api-1.7.36.jar
 *   javac -cp $CP RecordBatchGolden.java && java -cp $CP:. RecordBatchGolden
 */
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.*;

public class RecordBatchGolden {
    static byte[] b(String s) { return s == null ? null : s.getBytes(StandardCharsets.UTF_8); }
    static void dump(String name, MemoryRecordsBuilder builder) {
        ByteBuffer buf = builder.build().buffer();
        StringBuilder sb = new StringBuilder();
        while (buf.hasRemaining()) sb.append(String.format("%02x", buf.get()));
        System.out.println(name + " " + sb);
    }
    static MemoryRecordsBuilder make(long pid, short epoch, int seq, boolean txn, int leaderEpoch) {
        return MemoryRecords.builder(ByteBuffer.allocate(1 << 20), RecordBatch.MAGIC_VALUE_V2, Compression.NONE,
            TimestampType.CREATE_TIME, 0L, RecordBatch.NO_TIMESTAMP, pid, epoch, seq, txn, leaderEpoch);
    }
    public static void main(String[] args) {
        MemoryRecordsBuilder one = make(-1L, (short) -1, -1, false, -1);
        one.append(1000L, b("k"), b("v"));
        dump("one", one);

        MemoryRecordsBuilder mixed = make(1000L, (short) 5, 7, true, 3);
        mixed.append(1_700_000_000_000L, null, b("value-0"));
        mixed.append(1_700_000_000_005L, b("key-1"), null, new Header[] {new RecordHeader("h1", b("x")), new RecordHeader("h2", (byte[]) null)});
        mixed.append(1_699_999_999_000L, b(""), b(""), new Header[] {new RecordHeader("é", b("ü"))});
        mixed.append(1_700_000_100_000L, (byte[]) null, (byte[]) null);
        byte[] big = new byte[20000];
        for (int i = 0; i < big.length; i++) big[i] = (byte) (i % 251);
        mixed.append(1_700_000_000_001L, b("big"), big);
        dump("mixed", mixed);

        MemoryRecordsBuilder many = make(42L, (short) 0, 2147483000, false, 0);
        for (int i = 0; i < 300; i++)
            many.append(5_000L + i * 97L, i % 3 == 0 ? null : b("k" + i), b("v".repeat(i % 130)));
        dump("many", many);
    }
}
