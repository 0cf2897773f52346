package io.kvraft.benchmark;

import org.HdrHistogram.Histogram;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Adds up the results of many clients: histograms are added bucket by bucket (percentiles are
 * never averaged), counts, rates and errors are summed.
 */
public final class Merge {

    public static final String MERGED_JSON = "merged.json";

    private Merge() {
    }

    /** The merged figures and the histograms behind them. */
    public record Merged(ResultJson result, Histogram put, Histogram get, Histogram scan, Histogram total,
                         Map<OpType, Histogram> coordination) {
        public Merged(ResultJson result, Histogram put, Histogram get, Histogram scan, Histogram total) {
            this(result, put, get, scan, total, Map.of());
        }
    }

    /** The types of the sequence and lock workloads, merged like scans: present once a client had them. */
    static final List<OpType> COORDINATION = List.of(OpType.SEQUENCE, OpType.ALLOC, OpType.ACQUIRE, OpType.RELEASE);

    /** Reads every client's files in {@code dirs} (a directory given twice counts once) and merges them. */
    public static Merged merge(List<Path> dirs) {
        Set<Path> seen = new LinkedHashSet<>();
        for (Path d : dirs) {
            seen.add(canonical(d));
        }
        List<ResultFiles.ClientData> clients = new ArrayList<>();
        for (Path d : seen) {
            clients.addAll(ResultFiles.read(d));
        }
        return merge(clients);
    }

    public static Merged merge(Iterable<ResultFiles.ClientData> clients) {
        Histogram put = new Histogram(Results.DIGITS);
        Histogram get = new Histogram(Results.DIGITS);
        Histogram scan = new Histogram(Results.DIGITS);
        Map<String, Long> errors = new TreeMap<>();
        List<String> ids = new ArrayList<>();
        double putRate = 0;
        double getRate = 0;
        double scanRate = 0;
        long putErrors = 0;
        long getErrors = 0;
        long scanErrors = 0;
        Long hits = null;
        Long misses = null;
        Long scanKeys = null;
        double keysPerSec = 0;
        boolean scans = false;
        long warmup = 0;
        long unfinished = 0;
        long unsent = 0;
        double duration = 0;
        Instant start = null;
        Instant end = null;
        Map<OpType, Histogram> coord = new java.util.EnumMap<>(OpType.class);
        Map<OpType, double[]> coordRateAndErrors = new java.util.EnumMap<>(OpType.class);
        for (ResultFiles.ClientData c : clients) {
            ResultJson r = c.result();
            for (OpType op : COORDINATION) {
                Histogram h = c.byTag().get(op.label());
                ResultJson.OpStats st = r.ops() == null ? null : r.op(op.label());
                if (h != null || st != null) {
                    Histogram sum = coord.computeIfAbsent(op, o -> new Histogram(Results.DIGITS));
                    if (h != null) {
                        sum.add(h);
                    }
                    double[] re = coordRateAndErrors.computeIfAbsent(op, o -> new double[2]);
                    re[0] += rate(r, op.label());
                    re[1] += errorsOf(r, op.label());
                }
            }
            put.add(c.put());
            get.add(c.get());
            scan.add(c.scan());
            ids.add(r.clientId());
            putRate += rate(r, "put");
            getRate += rate(r, "get");
            scanRate += rate(r, "scan");
            putErrors += errorsOf(r, "put");
            getErrors += errorsOf(r, "get");
            scanErrors += errorsOf(r, "scan");
            ResultJson.OpStats g = r.ops() == null ? null : r.op("get");
            if (g != null && g.hits() != null) {
                hits = sum(hits, g.hits());
                misses = sum(misses, g.misses());
            }
            ResultJson.OpStats sc = r.ops() == null ? null : r.op("scan");
            if (sc != null) {
                scans = true;
                scanKeys = sum(scanKeys, sc.keys() == null ? 0 : sc.keys());
                keysPerSec += sc.keysPerSec() == null ? 0 : sc.keysPerSec();
            }
            if (r.errors() != null) {
                r.errors().forEach((k, v) -> errors.merge(k, v, Long::sum));
            }
            warmup += r.warmupOps();
            unfinished += r.unfinished();
            unsent += r.unsent();
            duration = Math.max(duration, r.durationSeconds());
            start = min(start, parse(r.startTime()));
            end = max(end, parse(r.endTime()));
        }
        if (ids.isEmpty()) {
            throw new UsageException("nothing to merge");
        }
        Histogram total = put.copy();
        total.add(get);
        total.add(scan);
        double coordRate = 0;
        for (Histogram h : coord.values()) {
            total.add(h);
        }
        for (double[] re : coordRateAndErrors.values()) {
            coordRate += re[0];
        }
        long errorCount = errors.values().stream().mapToLong(Long::longValue).sum();
        long all = total.getTotalCount() + errorCount;
        Map<String, ResultJson.OpStats> ops = new LinkedHashMap<>();
        ops.put("put", ResultJson.OpStats.of(put, putErrors, putRate));
        ResultJson.OpStats gets = ResultJson.OpStats.of(get, getErrors, getRate);
        ops.put("get", hits == null ? gets : gets.withHits(hits, misses));
        if (scans || scan.getTotalCount() > 0) {
            ops.put("scan", ResultJson.OpStats.of(scan, scanErrors, scanRate)
                    .withKeys(scanKeys == null ? 0 : scanKeys, keysPerSec));
        }
        coord.forEach((op, h) -> ops.put(op.label(), ResultJson.OpStats.of(h, (long) coordRateAndErrors.get(op)[1],
                coordRateAndErrors.get(op)[0])));
        ops.put("total", ResultJson.OpStats.of(total, errorCount, putRate + getRate + scanRate + coordRate));
        ResultJson merged = new ResultJson("merged", ids.size(), ids, str(start), str(end), duration, null, ops,
                errors, errorCount, all == 0 ? 0 : (double) errorCount / all, warmup, unfinished, unsent, null);
        return new Merged(merged, put, get, scan, total, Map.copyOf(coord));
    }

    private static Long sum(Long a, Long b) {
        return a == null ? b : b == null ? a : a + b;
    }

    /** The merged latency table, errors, and the number of clients. */
    public static void print(PrintStream out, Merged m, double maxErrorRate) {
        ResultJson r = m.result();
        out.println("kv-benchmark merge of " + r.clients() + " client results: " + String.join(", ", r.clientIds()));
        out.println();
        List<ReportPrinter.Row> rows = new ArrayList<>(List.of(
                new ReportPrinter.Row("put", m.put(), r.op("put").opsPerSec()),
                new ReportPrinter.Row("get", m.get(), r.op("get").opsPerSec())));
        if (r.op("scan") != null) {
            rows.add(new ReportPrinter.Row("scan", m.scan(), r.op("scan").opsPerSec()));
        }
        for (OpType op : COORDINATION) {
            Histogram h = m.coordination().get(op);
            if (h != null) {
                rows.add(new ReportPrinter.Row(op.label(), h, r.op(op.label()).opsPerSec()));
            }
        }
        rows.add(new ReportPrinter.Row("total", m.total(), r.op("total").opsPerSec()));
        ReportPrinter.printLatencyTable(out, rows);
        out.println();
        ReportPrinter.printOperations(out, r.ops());
        out.println();
        ReportPrinter.printErrors(out, r.errors(), m.total().getTotalCount() + r.errorCount(), maxErrorRate);
        out.println();
        out.printf(Locale.ROOT, "clients: %d%n", r.clients());
        out.flush();
    }

    public static Path writeJson(Path outDir, Merged m) {
        Path file = outDir.resolve(MERGED_JSON);
        ResultFiles.writeJson(file, m.result());
        return file;
    }

    private static double rate(ResultJson r, String op) {
        return r.ops() == null || r.op(op) == null ? 0 : r.op(op).opsPerSec();
    }

    private static long errorsOf(ResultJson r, String op) {
        return r.ops() == null || r.op(op) == null ? 0 : r.op(op).errors();
    }

    private static Path canonical(Path p) {
        try {
            return p.toRealPath();
        } catch (IOException e) {
            return p.toAbsolutePath().normalize();
        }
    }

    private static Instant parse(String s) {
        try {
            return s == null ? null : Instant.parse(s);
        } catch (RuntimeException e) {
            return null;
        }
    }

    private static Instant min(Instant a, Instant b) {
        return a == null ? b : b == null ? a : a.isBefore(b) ? a : b;
    }

    private static Instant max(Instant a, Instant b) {
        return a == null ? b : b == null ? a : a.isAfter(b) ? a : b;
    }

    private static String str(Instant i) {
        return i == null ? null : i.toString();
    }
}
