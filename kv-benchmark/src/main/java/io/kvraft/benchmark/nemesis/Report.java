package io.kvraft.benchmark.nemesis;

import org.HdrHistogram.Histogram;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/** The outcome of a nemesis run: the summary printed at the end, and the files written to --out. */
final class Report {

    private static final int MAX_PRINTED_VIOLATIONS = 5;

    private final String duration;
    private final String engine;
    private final List<Nemesis.Fault> kinds;
    private final int keys;
    private final RegisterWorkload load;
    private final Nemesis nemesis;
    private final HistoryCheck.Summary check;
    private final long[] fresh; // checked, lost or wrong, unreadable
    private final int unreadKeys;
    private final Recovery recovery;
    private final Map<Nemesis.Fault, List<Double>> recoveries;
    private final Histogram during;
    private final Histogram after;
    private final long origin;
    private final int startRegions;
    private final RegionMapCheck.Result regionMap;

    Report(String duration, String engine, List<Nemesis.Fault> kinds, int keys, RegisterWorkload load, Nemesis nemesis,
           HistoryCheck.Summary check, long[] fresh, int unreadKeys, Recovery recovery,
           Map<Nemesis.Fault, List<Double>> recoveries, Histogram during, Histogram after, long origin,
           int startRegions, RegionMapCheck.Result regionMap) {
        this.startRegions = startRegions;
        this.regionMap = regionMap;
        this.recoveries = recoveries;
        this.duration = duration;
        this.engine = engine;
        this.kinds = kinds;
        this.keys = keys;
        this.load = load;
        this.nemesis = nemesis;
        this.check = check;
        this.fresh = fresh;
        this.unreadKeys = unreadKeys;
        this.recovery = recovery;
        this.during = during;
        this.after = after;
        this.origin = origin;
    }

    boolean passed() {
        return check.ok() && fresh[1] == 0 && fresh[2] == 0 && unreadKeys == 0 && recovery.recovered()
                && load.scansMalformed.get() == 0 && regionMap.ok();
    }

    /**
     * The nemesis run's exit code: 0 on PASS, 1 on a violation, lost write, undecided key, no recovery, or
     * region maps that differ.
     */
    int exitCode() {
        return passed() ? io.kvraft.benchmark.BenchmarkMain.EXIT_OK : io.kvraft.benchmark.BenchmarkMain.EXIT_FAILED;
    }

    String text() {
        StringWriter sw = new StringWriter();
        PrintWriter w = new PrintWriter(sw);
        Map<Nemesis.Fault, Integer> counts = nemesis.counts();
        w.printf(Locale.ROOT, "%n-- nemesis report: %s, engine %s, %d nodes%s%s, %d regions at the start, %d register keys --%n",
                duration, engine, nemesis.nodes(), nemesis.joins() != null ? " and a spare for joins" : "",
                regionMap.replicas() > 0 ? " (" + regionMap.replicas() + " replicas per region)" : "", startRegions, keys);
        w.printf(Locale.ROOT, "operations      %,d ok, %,d failed (not applied), %,d indeterminate (may have applied);"
                        + " %,d failed on a stale route (KEY_OUT_OF_RANGE, STALE_EPOCH, REGION_NOT_FOUND: not applied)%n",
                load.ok.get(), load.failed.get(), load.unknown.get(), load.routeErrors.get());
        for (String sample : load.routeErrorSamples) {
            w.printf(Locale.ROOT, "  stale route   %s%n", sample);
        }
        w.printf(Locale.ROOT, "ranges          scans %,d ok, %,d failed, %,d malformed; range deletes %,d ok, %,d failed,"
                        + " %,d indeterminate (a failed one is checked as indeterminate: some regions may have done it)%n",
                load.scansOk.get(), load.scansFailed.get(), load.scansMalformed.get(), load.rangeDeletesOk.get(),
                load.rangeDeletesFailed.get(), load.rangeDeletesUnknown.get());
        w.printf(Locale.ROOT, "faults          %d injected: %s%n", nemesis.events.size(), counts.entrySet().stream()
                .map(e -> e.getKey().label() + " " + e.getValue()).collect(Collectors.joining(", ")));
        String regionCount = String.format(Locale.ROOT, "; regions %d at the start, %s at the end", startRegions,
                regionMap.ok() ? String.valueOf(regionMap.regions()) : "?");
        if (nemesis.splits() != null) {
            w.printf(Locale.ROOT, "splits          %s%s%n", nemesis.splits().summary(), regionCount);
        }
        if (nemesis.merges() != null) { // the region count once, on the splits line when there is one
            w.printf(Locale.ROOT, "merges          %s%s%n", nemesis.merges().summary(),
                    nemesis.splits() == null ? regionCount : "");
        }
        if (nemesis.drains() != null) {
            w.printf(Locale.ROOT, "drains          %s%n", nemesis.drains().summary());
        }
        if (nemesis.joins() != null) {
            w.printf(Locale.ROOT, "joins           %s%n", nemesis.joins().summary());
        }
        if (nemesis.replaces() != null) {
            w.printf(Locale.ROOT, "replaces        %s%n", nemesis.replaces().summary());
        }
        w.printf(Locale.ROOT, "linearizability %,d operations on %d keys checked in %.2f s: %d violations, %d undecided%n",
                check.operations(), check.keys(), check.elapsedNanos() / 1e9, check.violations().size(),
                check.undecided().size());
        w.printf(Locale.ROOT, "acked writes    %,d fresh-key puts read back: %,d lost or wrong, %,d unreadable;"
                + " final read of every register key: %d unread%n", fresh[0], fresh[1], fresh[2], unreadKeys);
        w.printf(Locale.ROOT, "recovery        %s after the last heal (all regions led after %.1f s, last error %.1f s"
                        + " after it)%n", recovery.recovered() ? String.format(Locale.ROOT, "%.1f s", recovery.seconds())
                        : String.format(Locale.ROOT, "NOT within %.0f s", recovery.limitSeconds()),
                recovery.ledAfterSeconds(), recovery.lastErrorAfterSeconds());
        w.printf(Locale.ROOT, "region map      %s%n", regionMap.text());
        w.printf(Locale.ROOT, "per fault       from heal to all regions led and no more errors: %s%n", perFault());
        w.printf(Locale.ROOT, "latency (ok)    during faults p50 %s p99 %s max %s; after the last heal p50 %s p99 %s%n",
                ms(during, 50), ms(during, 99), ms(during, 100), ms(after, 50), ms(after, 99));
        int printed = 0;
        for (Map.Entry<String, RegisterChecker.Result> v : check.violations().entrySet()) {
            if (printed++ == MAX_PRINTED_VIOLATIONS) {
                w.printf("... more in violations.txt%n");
                break;
            }
            w.print(violation(v.getKey(), v.getValue(), 40));
        }
        if (!check.undecided().isEmpty()) {
            w.printf("undecided keys: %s%n", check.undecided());
        }
        w.printf("result          %s%n", passed() ? "PASS" : "FAIL");
        w.flush();
        return sw.toString();
    }

    private String violation(String key, RegisterChecker.Result r, int maxLines) {
        StringBuilder b = new StringBuilder();
        List<Op> sub = check.subHistory(key);
        b.append("VIOLATION on key ").append(key).append(" (").append(sub.size()).append(" operations)\n");
        b.append("  longest linearizable prefix found: ").append(r.longest().size()).append(" operations, ending with\n");
        List<Op> tail = r.longest().subList(Math.max(0, r.longest().size() - 5), r.longest().size());
        tail.forEach(o -> b.append("    ").append(o.describe(origin)).append('\n'));
        if (r.stuckAt() != null) {
            b.append("  could not place: ").append(r.stuckAt().describe(origin)).append('\n');
        }
        b.append("  the key's history").append(sub.size() > maxLines ? " (first " + maxLines + ", all in violations.txt)" : "")
                .append(":\n");
        sub.stream().limit(maxLines).forEach(o -> b.append("    ").append(o.describe(origin)).append('\n'));
        return b.toString();
    }

    void write(Path dir, List<Op> history) throws IOException {
        Files.writeString(dir.resolve("report.txt"), text());
        StringBuilder f = new StringBuilder();
        for (Nemesis.Event e : nemesis.events) {
            f.append(String.format(Locale.ROOT, "%8.1f s .. %8.1f s  %-9s %s%n", e.injectedAt(), e.healedAt(),
                    e.fault().label(), e.detail()));
        }
        Files.writeString(dir.resolve("faults.txt"), f);
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(dir.resolve("history.txt")))) {
            history.stream().sorted(Comparator.comparingLong(Op::invokeNs))
                    .forEach(o -> w.println(o.key() + " " + o.describe(origin)));
        }
        StringBuilder v = new StringBuilder();
        check.violations().forEach((k, r) -> v.append(violation(k, r, Integer.MAX_VALUE)).append('\n'));
        Files.writeString(dir.resolve("violations.txt"), v);
    }

    private String perFault() {
        StringBuilder b = new StringBuilder();
        recoveries.forEach((f, list) -> {
            double[] ok = list.stream().mapToDouble(Double::doubleValue).filter(d -> !Double.isNaN(d)).sorted().toArray();
            long late = list.size() - ok.length;
            b.append(b.length() == 0 ? "" : "; ").append(f.label()).append(' ');
            if (ok.length > 0) {
                b.append(String.format(Locale.ROOT, "median %.1f s, max %.1f s", ok[ok.length / 2], ok[ok.length - 1]));
            }
            if (late > 0) {
                b.append(ok.length > 0 ? ", " : "").append(late).append(" not before the next fault");
            }
        });
        return b.length() == 0 ? "-" : b.toString();
    }

    private static String ms(Histogram h, double percentile) {
        if (h.getTotalCount() == 0) {
            return "-";
        }
        long us = percentile >= 100 ? h.getMaxValue() : h.getValueAtPercentile(percentile);
        return String.format(Locale.ROOT, "%.1f ms", us / 1000.0);
    }
}
