package io.kvraft.benchmark;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import org.HdrHistogram.EncodableHistogram;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogReader;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * A client's result files in an output directory: {@code result-<client-id>.json} (figures, config,
 * errors) and {@code histogram-<client-id>.hlog} (HdrHistogram interval log, microseconds, tags
 * {@code put}, {@code get}, {@code scan} and those of the sequence and lock workloads), which merge adds up.
 */
public final class ResultFiles {

    public static final String JSON_PREFIX = "result-";
    public static final String HLOG_PREFIX = "histogram-";

    static final ObjectMapper MAPPER = new ObjectMapper()
            .enable(SerializationFeature.INDENT_OUTPUT)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

    private ResultFiles() {
    }

    /** A client's data read back: its JSON and its histograms summed over all intervals. */
    public record ClientData(Path jsonFile, ResultJson result, Histogram put, Histogram get, Histogram scan,
                             Map<String, Histogram> byTag) {
        /** Without the other tags' histograms (the sequence and lock workloads'). */
        public ClientData(Path jsonFile, ResultJson result, Histogram put, Histogram get, Histogram scan) {
            this(jsonFile, result, put, get, scan, Map.of());
        }
    }

    /** The client id as a file-name part: anything but letters, digits, dot, dash and underscore becomes '_'. */
    public static String fileSafe(String clientId) {
        return clientId.replaceAll("[^A-Za-z0-9._-]", "_");
    }

    public static Path jsonFile(Path dir, String clientId) {
        return dir.resolve(JSON_PREFIX + fileSafe(clientId) + ".json");
    }

    public static Path hlogFile(Path dir, String clientId) {
        return dir.resolve(HLOG_PREFIX + fileSafe(clientId) + ".hlog");
    }

    /** Writes both files of {@code r} into {@code dir} (created if missing); returns the JSON file. */
    public static Path write(Path dir, RunResult r) {
        try {
            Files.createDirectories(dir);
            Path json = jsonFile(dir, r.clientId());
            writeJson(json, toJson(r));
            Files.write(hlogFile(dir, r.clientId()), r.hlog());
            return json;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write results to " + dir + ": " + e.getMessage(), e);
        }
    }

    public static ResultJson toJson(RunResult r) {
        Map<String, ResultJson.OpStats> ops = new LinkedHashMap<>();
        ops.put("put", ResultJson.OpStats.of(r.putHistogram(), r.putErrors(), r.putRate()));
        ops.put("get", ResultJson.OpStats.of(r.getHistogram(), r.getErrors(), r.getRate())
                .withHits(r.getHits(), r.getMisses()));
        if (r.ran(OpType.SCAN) || r.options().scanRatio() > 0) {
            ops.put("scan", ResultJson.OpStats.of(r.histogram(OpType.SCAN), r.errors(OpType.SCAN), r.rate(OpType.SCAN))
                    .withKeys(r.scanKeys(), r.scanKeys() / r.durationSeconds()));
        }
        for (OpType op : List.of(OpType.SEQUENCE, OpType.ALLOC, OpType.ACQUIRE, OpType.RELEASE)) {
            if (r.ran(op)) {
                ops.put(op.label(), ResultJson.OpStats.of(r.histogram(op), r.errors(op), r.rate(op)));
            }
        }
        ops.put("total", ResultJson.OpStats.of(r.totalHistogram(), r.errorCount(), r.opsRate()));
        double cpu = r.cpuMillisPer1kOps();
        return new ResultJson(r.clientId(), 1, List.of(r.clientId()), r.start().toString(), r.end().toString(),
                r.durationSeconds(), r.options(), ops, r.errors(), r.errorCount(), r.errorRate(), r.warmupOps(),
                r.unfinished(), r.unsent(), cpu < 0 ? null : Math.round(cpu * 1000) / 1000.0);
    }

    public static void writeJson(Path file, Object value) {
        try {
            Path parent = file.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            MAPPER.writeValue(file.toFile(), value);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file + ": " + e.getMessage(), e);
        }
    }

    public static ResultJson readJson(Path file) {
        try {
            return MAPPER.readValue(file.toFile(), ResultJson.class);
        } catch (IOException e) {
            throw new UsageException(file + ": not a kv-benchmark result: " + firstLine(e.getMessage()));
        } catch (UsageException e) {
            throw new UsageException(file + ": " + e.getMessage());
        }
    }

    /** Every client's files in {@code dir}, sorted by file name. */
    public static List<ClientData> read(Path dir) {
        if (!Files.isDirectory(dir)) {
            throw new UsageException(dir + ": no such directory");
        }
        List<Path> jsons;
        try (Stream<Path> s = Files.list(dir)) {
            jsons = s.filter(p -> {
                String n = p.getFileName().toString();
                return n.startsWith(JSON_PREFIX) && n.endsWith(".json");
            }).sorted().toList();
        } catch (IOException e) {
            throw new UsageException(dir + ": cannot list: " + e.getMessage());
        }
        if (jsons.isEmpty()) {
            throw new UsageException(dir + ": no " + JSON_PREFIX + "*.json files");
        }
        List<ClientData> out = new ArrayList<>();
        for (Path json : jsons) {
            String n = json.getFileName().toString();
            String id = n.substring(JSON_PREFIX.length(), n.length() - ".json".length());
            Path hlog = dir.resolve(HLOG_PREFIX + id + ".hlog");
            Map<String, Histogram> byTag = readHlog(hlog);
            out.add(new ClientData(json, readJson(json), byTag.getOrDefault("put", new Histogram(Results.DIGITS)),
                    byTag.getOrDefault("get", new Histogram(Results.DIGITS)),
                    byTag.getOrDefault("scan", new Histogram(Results.DIGITS)), byTag));
        }
        return out;
    }

    /** All interval histograms of an hlog file added up per tag (untagged ones under ""). */
    public static Map<String, Histogram> readHlog(Path file) {
        try (InputStream in = Files.newInputStream(file)) {
            return readHlog(in, file.toString());
        } catch (NoSuchFileException e) {
            throw new UsageException(file + ": no such file (each result-*.json needs its histogram-*.hlog)");
        } catch (IOException e) {
            throw new UsageException(file + ": cannot read: " + e.getMessage());
        }
    }

    /** Like {@link #readHlog(Path)}, from the bytes of a log. */
    public static Map<String, Histogram> readHlogBytes(byte[] log) {
        return readHlog(new java.io.ByteArrayInputStream(log), "hlog");
    }

    private static Map<String, Histogram> readHlog(InputStream in, String source) {
        Map<String, Histogram> byTag = new TreeMap<>();
        try {
            HistogramLogReader reader = new HistogramLogReader(in);
            EncodableHistogram e;
            while ((e = reader.nextIntervalHistogram()) != null) {
                if (!(e instanceof Histogram h)) {
                    throw new UsageException(source + ": unexpected double histogram");
                }
                String tag = h.getTag() == null ? "" : h.getTag();
                byTag.computeIfAbsent(tag, t -> new Histogram(Results.DIGITS)).add(h);
            }
        } catch (UsageException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new UsageException(source + ": not a readable HdrHistogram log: " + firstLine(String.valueOf(e)));
        }
        return byTag;
    }

    private static String firstLine(String s) {
        if (s == null) {
            return "";
        }
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }
}
