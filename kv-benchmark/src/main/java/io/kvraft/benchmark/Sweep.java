package io.kvraft.benchmark;

import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.kvraft.client.KvClient;
import org.HdrHistogram.Histogram;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.function.LongSupplier;

/**
 * A ladder of short runs on one cluster, raising either the thread count (closed loop, or open loop
 * at a fixed --rate) or the open-loop target rate, to find the peak throughput and show how latency
 * grows on the way (NuRaft's "latency by thread" and "latency by ops" tables). With read modes given,
 * every level runs once per mode (on {@code withReadMode} views of the one client), so the read paths
 * are compared at rising load; with a local cluster each step also reports the servers' CPU per op.
 */
public final class Sweep {

    public static final String JSON_FILE = "sweep.json";
    public static final String HTML_FILE = "sweep.html";

    private Sweep() {
    }

    public enum Kind {
        THREADS("threads"), RATE("rate");

        private final String label;

        Kind(String label) {
            this.label = label;
        }

        public String label() {
            return label;
        }
    }

    /**
     * What to sweep: each ladder value is one step of {@code stepDuration} seconds after {@code stepWarmup}, or,
     * with {@code readModes}, one step per read mode at each value (empty: the base workload's mode).
     */
    public record Plan(Kind kind, List<Double> ladder, double stepDuration, double stepWarmup, List<String> readModes) {

        public Plan(Kind kind, List<Double> ladder, double stepDuration, double stepWarmup) {
            this(kind, ladder, stepDuration, stepWarmup, List.of());
        }

        public Plan {
            ladder = List.copyOf(ladder);
            readModes = List.copyOf(readModes == null ? List.of() : readModes);
            if (new java.util.HashSet<>(readModes).size() != readModes.size()) {
                throw new UsageException("--read-modes names a mode twice: " + String.join(",", readModes));
            }
            if (ladder.isEmpty()) {
                throw new UsageException("the ladder needs at least one step");
            }
            for (double v : ladder) {
                if (!(v > 0) || (kind == Kind.THREADS && v != Math.rint(v))) {
                    throw new UsageException("--" + kind.label() + "-ladder values must be positive"
                            + (kind == Kind.THREADS ? " integers" : "") + ", got " + fmt(v));
                }
            }
        }

        WorkloadOptions stepOptions(WorkloadOptions base, double value) {
            WorkloadOptions o = base.withTimes(stepDuration, stepWarmup);
            return kind == Kind.THREADS ? o.withThreads((int) value) : o.withRate(value);
        }

        /** The step at {@code value} in read mode {@code readMode} (null: the base's). */
        WorkloadOptions stepOptions(WorkloadOptions base, double value, String readMode) {
            WorkloadOptions o = stepOptions(base, value);
            return readMode == null ? o : o.toBuilder().readMode(readMode).build();
        }

        /** The read modes of each level: the laddered ones, or one null (the base's mode). */
        List<String> modesPerLevel() {
            return readModes.isEmpty() ? java.util.Collections.singletonList(null) : readModes;
        }
    }

    /**
     * One step's figures (latencies in ms, successful operations only). {@code serverCpuUsPerOp}: the local
     * cluster's CPU in the step's measured window (no warm-up, no drain) per operation completed in that window;
     * null when the servers are not local.
     */
    @com.fasterxml.jackson.annotation.JsonInclude(com.fasterxml.jackson.annotation.JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({"step", "threads", "inflight", "targetOpsPerSec", "readMode", "opsPerSec", "count", "p50",
            "p95", "p99", "p99.9", "p99.99", "max", "errors", "errorRate", "unsent", "serverCpuUsPerOp"})
    public record Step(
            String step,
            int threads,
            int inflight,
            double targetOpsPerSec,
            String readMode,
            double opsPerSec,
            long count,
            @com.fasterxml.jackson.annotation.JsonProperty("p50") double p50,
            @com.fasterxml.jackson.annotation.JsonProperty("p95") double p95,
            @com.fasterxml.jackson.annotation.JsonProperty("p99") double p99,
            @com.fasterxml.jackson.annotation.JsonProperty("p99.9") double p999,
            @com.fasterxml.jackson.annotation.JsonProperty("p99.99") double p9999,
            @com.fasterxml.jackson.annotation.JsonProperty("max") double max,
            long errors,
            double errorRate,
            long unsent,
            Double serverCpuUsPerOp) {

        static Step of(String label, RunResult r, Double serverCpuUsPerOp) {
            Histogram h = r.totalHistogram();
            return new Step(label, r.options().threads(), r.options().inflight(), r.options().rate(),
                    r.options().readMode(), Math.round(r.opsRate() * 100) / 100.0, r.ops(), ReportPrinter.ms(h, 50),
                    ReportPrinter.ms(h, 95), ReportPrinter.ms(h, 99), ReportPrinter.ms(h, 99.9),
                    ReportPrinter.ms(h, 99.99), ReportPrinter.maxMs(h), r.errorCount(), r.errorRate(), r.unsent(),
                    serverCpuUsPerOp);
        }
    }

    /** The whole sweep, as written to sweep.json; {@code readModes} empty unless the read mode was laddered. */
    @JsonPropertyOrder({"kind", "startTime", "stepDurationSeconds", "stepWarmupSeconds", "readModes", "config", "steps",
            "peakStep", "peakOpsPerSec"})
    public record Result(String kind, String startTime, double stepDurationSeconds, double stepWarmupSeconds,
                         List<String> readModes, WorkloadOptions config, List<Step> steps, String peakStep,
                         double peakOpsPerSec) {

        public Result {
            readModes = readModes == null ? List.of() : List.copyOf(readModes);
        }

        /** The step with the highest throughput among those in {@code readMode}. */
        public Optional<Step> peakOf(String readMode) {
            return steps.stream().filter(s -> java.util.Objects.equals(s.readMode(), readMode))
                    .max(java.util.Comparator.comparingDouble(Step::opsPerSec));
        }

        /** Why the sweep fails the error-rate limit: the first step over it. */
        public Optional<String> errorRateViolation(double maxErrorRate) {
            for (Step s : steps) {
                Optional<String> v = RunResult.errorRateViolation(s.errors(), s.count() + s.errors(), maxErrorRate);
                if (v.isPresent()) {
                    return Optional.of("step " + s.step() + ": " + v.get());
                }
            }
            return Optional.empty();
        }
    }

    /**
     * Preloads once, then runs each step on {@code client}; progress lines go to {@code progress}.
     */
    public static Result run(Plan plan, WorkloadOptions base, KvClient client, PrintStream progress) {
        return run(plan, base, client, progress, null);
    }

    /** As above; {@code serverCpuNanos} (null: not known) reads the servers' CPU time so far, for CPU per op. */
    public static Result run(Plan plan, WorkloadOptions base, KvClient client, PrintStream progress,
                             LongSupplier serverCpuNanos) {
        KeySpace keys = BenchmarkRun.prepare(base, client, progress);
        return run(plan, base, client, keys, progress, NanoClock.SYSTEM, serverCpuNanos);
    }

    static Result run(Plan plan, WorkloadOptions base, KvClient client, KeySpace keys, PrintStream progress,
                      NanoClock clock, LongSupplier serverCpuNanos) {
        String started = Instant.now().toString();
        List<Step> steps = new ArrayList<>();
        List<String> modes = plan.modesPerLevel();
        int n = plan.ladder().size() * modes.size();
        int i = 0;
        for (double v : plan.ladder()) {
            for (String mode : modes) {
                String label = plan.kind().label() + "=" + fmt(v) + (mode == null ? "" : " read-mode=" + mode);
                WorkloadOptions o = plan.stepOptions(base, v, mode);
                String prefix = "[step " + (++i) + "/" + n + " " + label + "] ";
                // the servers' CPU in the measured window only, as the run report's first figure: a step's
                // warm-up carries the JIT and the previous step's drain
                long[] window = new long[2]; // the runner marks both ends, also when the load stops early
                LoadRunner runner = new LoadRunner(o, client, keys, clock, progress, prefix);
                if (serverCpuNanos != null) {
                    runner.onMeasuredWindow(() -> window[0] = serverCpuNanos.getAsLong(),
                            () -> window[1] = serverCpuNanos.getAsLong());
                }
                RunResult r = runner.run();
                long completed = r.ops() + r.errorCount();
                Double cpuPerOp = serverCpuNanos == null || completed == 0 ? null
                        : Math.round((window[1] - window[0]) / 1000.0 / completed * 100) / 100.0;
                Step s = Step.of(label, r, cpuPerOp);
                steps.add(s);
                if (progress != null) {
                    progress.printf(Locale.ROOT, "%sdone: %.0f ops/s, p99 %.3f ms, errors %d%s%n", prefix,
                            s.opsPerSec(), s.p99(), s.errors(),
                            cpuPerOp == null ? "" : String.format(Locale.ROOT, ", server CPU %.1f us/op", cpuPerOp));
                }
            }
        }
        Step peak = steps.get(0);
        for (Step s : steps) {
            if (s.opsPerSec() > peak.opsPerSec()) {
                peak = s;
            }
        }
        return new Result(plan.kind().label(), started, plan.stepDuration(), plan.stepWarmup(), plan.readModes(), base,
                List.copyOf(steps), peak.step(), peak.opsPerSec());
    }

    /**
     * The latency table and the peak line; a read-mode column when the modes were laddered (and a peak line per
     * mode), a server CPU column when the servers were local.
     */
    public static void print(PrintStream out, Result r) {
        boolean threads = r.kind().equals(Kind.THREADS.label());
        boolean modes = !r.readModes().isEmpty();
        boolean cpu = r.steps().stream().anyMatch(s -> s.serverCpuUsPerOp() != null);
        out.println(ReportPrinter.header(threads ? "latency by thread (ms)" : "latency by ops (ms)"));
        out.printf(Locale.ROOT, "%-8s %12s" + (modes ? " %-13s" : "%s") + " %12s %10s %10s %10s %10s %10s %10s %10s"
                        + (cpu ? " %14s" : "%s") + "%n",
                "threads", "target", modes ? "read-mode" : "", "ops/s", "p50", "p95", "p99", "p99.9", "p99.99", "max",
                "errors", cpu ? "srv-cpu-us/op" : "");
        for (Step s : r.steps()) {
            out.printf(Locale.ROOT, "%-8s %12s" + (modes ? " %-13s" : "%s")
                            + " %12.2f %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %10d" + (cpu ? " %14s" : "%s") + "%n",
                    Integer.toString(s.threads()),
                    s.targetOpsPerSec() > 0 ? fmt(s.targetOpsPerSec()) : "closed",
                    modes ? s.readMode() : "",
                    s.opsPerSec(), s.p50(), s.p95(), s.p99(), s.p999(), s.p9999(), s.max(), s.errors(),
                    !cpu ? "" : s.serverCpuUsPerOp() == null ? "?" : String.format(Locale.ROOT, "%.1f",
                            s.serverCpuUsPerOp()));
        }
        out.println();
        for (String mode : r.readModes()) {
            r.peakOf(mode).ifPresent(p -> out.printf(Locale.ROOT, "peak with %s reads: %.0f ops/s at step %s%n", mode,
                    p.opsPerSec(), p.step()));
        }
        out.printf(Locale.ROOT, "peak throughput: %.0f ops/s at step %s%n", r.peakOpsPerSec(), r.peakStep());
        out.flush();
    }

    /** Writes sweep.json and sweep.html into {@code dir}. */
    public static void write(Path dir, Result r) {
        try {
            Files.createDirectories(dir);
            ResultFiles.writeJson(dir.resolve(JSON_FILE), r);
            Files.writeString(dir.resolve(HTML_FILE), SweepChart.html(r), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the sweep to " + dir + ": " + e.getMessage(), e);
        }
    }

    static String fmt(double d) {
        return d == Math.rint(d) && Math.abs(d) < 1e15 ? Long.toString((long) d) : Double.toString(d);
    }
}
