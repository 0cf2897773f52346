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

/**
 * A ladder of short runs on one cluster, raising either the thread count (closed loop, or open loop
 * at a fixed --rate) or the open-loop target rate, to find the peak throughput and show how latency
 * grows on the way (NuRaft's "latency by thread" and "latency by ops" tables).
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

    /** What to sweep: each ladder value is one step of {@code stepDuration} seconds after {@code stepWarmup}. */
    public record Plan(Kind kind, List<Double> ladder, double stepDuration, double stepWarmup) {
        public Plan {
            ladder = List.copyOf(ladder);
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
    }

    /** One step's figures (latencies in ms, successful operations only). */
    @JsonPropertyOrder({"step", "threads", "inflight", "targetOpsPerSec", "opsPerSec", "count", "p50", "p95", "p99",
            "p99.9", "p99.99", "max", "errors", "errorRate", "unsent"})
    public record Step(
            String step,
            int threads,
            int inflight,
            double targetOpsPerSec,
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
            long unsent) {

        static Step of(String label, RunResult r) {
            Histogram h = r.totalHistogram();
            return new Step(label, r.options().threads(), r.options().inflight(), r.options().rate(),
                    Math.round(r.opsRate() * 100) / 100.0, r.ops(), ReportPrinter.ms(h, 50), ReportPrinter.ms(h, 95),
                    ReportPrinter.ms(h, 99), ReportPrinter.ms(h, 99.9), ReportPrinter.ms(h, 99.99),
                    ReportPrinter.maxMs(h), r.errorCount(), r.errorRate(), r.unsent());
        }
    }

    /** The whole sweep, as written to sweep.json. */
    @JsonPropertyOrder({"kind", "startTime", "stepDurationSeconds", "stepWarmupSeconds", "config", "steps",
            "peakStep", "peakOpsPerSec"})
    public record Result(String kind, String startTime, double stepDurationSeconds, double stepWarmupSeconds,
                         WorkloadOptions config, List<Step> steps, String peakStep, double peakOpsPerSec) {

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
        KeySpace keys = BenchmarkRun.prepare(base, client, progress);
        return run(plan, base, client, keys, progress, NanoClock.SYSTEM);
    }

    static Result run(Plan plan, WorkloadOptions base, KvClient client, KeySpace keys, PrintStream progress,
                      NanoClock clock) {
        String started = Instant.now().toString();
        List<Step> steps = new ArrayList<>();
        int n = plan.ladder().size();
        for (int i = 0; i < n; i++) {
            double v = plan.ladder().get(i);
            String label = plan.kind().label() + "=" + fmt(v);
            WorkloadOptions o = plan.stepOptions(base, v);
            String prefix = "[step " + (i + 1) + "/" + n + " " + label + "] ";
            RunResult r = new LoadRunner(o, client, keys, clock, progress, prefix).run();
            Step s = Step.of(label, r);
            steps.add(s);
            if (progress != null) {
                progress.printf(Locale.ROOT, "%sdone: %.0f ops/s, p99 %.3f ms, errors %d%n", prefix, s.opsPerSec(),
                        s.p99(), s.errors());
            }
        }
        Step peak = steps.get(0);
        for (Step s : steps) {
            if (s.opsPerSec() > peak.opsPerSec()) {
                peak = s;
            }
        }
        return new Result(plan.kind().label(), started, plan.stepDuration(), plan.stepWarmup(), base, List.copyOf(steps),
                peak.step(), peak.opsPerSec());
    }

    /** The latency table and the peak line. */
    public static void print(PrintStream out, Result r) {
        boolean threads = r.kind().equals(Kind.THREADS.label());
        out.println(ReportPrinter.header(threads ? "latency by thread (ms)" : "latency by ops (ms)"));
        out.printf(Locale.ROOT, "%-8s %12s %12s %10s %10s %10s %10s %10s %10s %10s%n",
                "threads", "target", "ops/s", "p50", "p95", "p99", "p99.9", "p99.99", "max",
                "errors");
        for (Step s : r.steps()) {
            out.printf(Locale.ROOT, "%-8s %12s %12.2f %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %10d%n",
                    Integer.toString(s.threads()),
                    s.targetOpsPerSec() > 0 ? fmt(s.targetOpsPerSec()) : "closed",
                    s.opsPerSec(), s.p50(), s.p95(), s.p99(), s.p999(), s.p9999(), s.max(), s.errors());
        }
        out.println();
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
