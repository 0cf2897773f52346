package io.kvraft.benchmark;

import io.kvraft.client.KvClient;
import io.kvraft.common.KvException;
import io.kvraft.client.admin.RegionInfo;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One benchmark run against a connected client: key space, preload, load, report, files. This is
 * what the CLI does once the client exists, and what an end-to-end test calls directly.
 */
public final class BenchmarkRun {

    private BenchmarkRun() {
    }

    /** Preloads, runs, prints the report to {@code out} and progress to {@code System.err}. */
    public static RunResult run(WorkloadOptions options, KvClient client, PrintStream out) {
        return run(options, client, out, System.err, null);
    }

    /**
     * Preloads, runs, prints the report to {@code out} and progress lines to {@code progress}
     * (null: none), and writes the result files into {@code outDir} when it is not null. Does not
     * apply the error-rate rule; see {@link RunResult#errorRateViolation(double)}.
     */
    public static RunResult run(WorkloadOptions options, KvClient client, PrintStream out, PrintStream progress,
                                Path outDir) {
        KeySpace keys = prepare(options, client, progress);
        RunResult result = measure(options, client, keys, progress, "");
        ReportPrinter.printRunReport(out, result);
        if (outDir != null) {
            Path json = ResultFiles.write(outDir, result);
            if (progress != null) {
                progress.println("results written to " + json + " and " + ResultFiles.hlogFile(outDir, result.clientId()));
            }
        }
        return result;
    }

    /**
     * The key space for {@code options} (asking the cluster for its regions for region-start), preloaded when the
     * workload reads it (not for sequences and locks, which live apart from the pairs).
     */
    public static KeySpace prepare(WorkloadOptions options, KvClient client, PrintStream progress) {
        KeySpace keys = keySpace(options, client);
        if (options.preloads()) {
            Preloader.preload(client, keys, options.valueSize(), options.seed(), progress);
        }
        return keys;
    }

    public static KeySpace keySpace(WorkloadOptions options, KvClient client) {
        if (options.keyDistribution() != KeyDistribution.REGION_START) {
            return KeySpace.of(options);
        }
        List<RegionInfo> regions;
        try {
            regions = client.admin().regions().get(60, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw new Preloader.PreloadException("cannot list the regions: " + KvException.unwrap(e.getCause()).getMessage());
        } catch (TimeoutException e) {
            throw new Preloader.PreloadException("cannot list the regions: no answer in 60 s");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Preloader.PreloadException("interrupted while listing the regions");
        }
        return KeySpace.regionStart(regions, options.keySize());
    }

    /** Warm-up, measurement and drain on an already preloaded key space; no report. */
    public static RunResult measure(WorkloadOptions options, KvClient client, KeySpace keys, PrintStream progress,
                                    String progressPrefix) {
        return measure(options, client, keys, progress, progressPrefix, null);
    }

    /** As above; with a recorder, puts write fresh keys and acknowledged ones are recorded. */
    public static RunResult measure(WorkloadOptions options, KvClient client, KeySpace keys, PrintStream progress,
                                    String progressPrefix, AckedRecorder recorder) {
        return measure(options, client, keys, progress, progressPrefix, recorder, () -> { }, () -> { });
    }

    /** As above; {@code windowStarted} and {@code windowEnded} run when the measured window starts and ends. */
    static RunResult measure(WorkloadOptions options, KvClient client, KeySpace keys, PrintStream progress,
                             String progressPrefix, AckedRecorder recorder, Runnable windowStarted,
                             Runnable windowEnded) {
        return new LoadRunner(options, client, keys, NanoClock.SYSTEM, progress, progressPrefix)
                .recordingAcked(recorder).onMeasuredWindow(windowStarted, windowEnded).run();
    }
}
