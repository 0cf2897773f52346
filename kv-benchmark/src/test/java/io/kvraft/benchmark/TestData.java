package io.kvraft.benchmark;

import io.kvraft.common.KvException;
import io.kvraft.common.ErrorCode;

import java.util.Map;

/** Builds RunResults from known latencies through the real Results path (record, tick, toResult). */
final class TestData {

    private TestData() {
    }

    /**
     * @param putMicros latencies of successful puts; spread evenly over {@code seconds} one-second intervals
     * @param errors    measured errors per code (as puts)
     */
    static RunResult result(String clientId, long[] putMicros, long[] getMicros, Map<ErrorCode, Integer> errors,
                            int seconds) {
        return result(clientId, putMicros, getMicros, new long[0], 0, errors, seconds);
    }

    /**
     * As above, with scans: {@code scanMicros} their latencies, each returning {@code keysPerScan} keys. Gets with
     * an odd index hit, the others miss.
     */
    static RunResult result(String clientId, long[] putMicros, long[] getMicros, long[] scanMicros, int keysPerScan,
                            Map<ErrorCode, Integer> errors, int seconds) {
        long sec = 1_000_000_000L;
        WorkloadOptions options = WorkloadOptions.builder().clientId(clientId).durationSeconds(seconds)
                .warmupSeconds(0).scanRatio(scanMicros.length > 0 ? 0.5 : 0).build();
        Results r = new Results(0, 0, seconds * sec, 1_700_000_000_000L, clientId);
        for (int s = 0; s < seconds; s++) {
            for (int i = s; i < putMicros.length; i += seconds) {
                r.record(OpType.PUT, s * sec, s * sec + putMicros[i] * 1000, null, 0);
            }
            for (int i = s; i < getMicros.length; i += seconds) {
                r.record(OpType.GET, s * sec, s * sec + getMicros[i] * 1000, null, i % 2);
            }
            for (int i = s; i < scanMicros.length; i += seconds) {
                r.record(OpType.SCAN, s * sec, s * sec + scanMicros[i] * 1000, null, keysPerScan);
            }
            if (s == 0) {
                errors.forEach((code, n) -> {
                    for (int i = 0; i < n; i++) {
                        r.record(OpType.PUT, 0, 1000, new KvException(code, "test"), 0);
                    }
                });
            }
            r.tick((s + 1) * sec);
        }
        r.close();
        r.tick(seconds * sec + 1);
        return r.toResult(options, 0, 0, -1);
    }

    static long[] range(long from, long to) {
        long[] v = new long[(int) (to - from + 1)];
        for (int i = 0; i < v.length; i++) {
            v[i] = from + i;
        }
        return v;
    }
}
