package io.kvraft.benchmark;

import io.kvraft.client.config.ClientConfig;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code kv-benchmark sweep}: a ladder of short runs on one cluster. */
@Command(name = "sweep", mixinStandardHelpOptions = true, sortOptions = false,
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:ok", "1:a step's error rate over --max-error-rate, or the run failed",
                "2:bad usage or configuration"},
        description = "Run a ladder of short steps on one cluster (started or given), raising the threads or the"
                + " open-loop target rate, and print latency by step and the peak throughput; with --read-modes, each"
                + " level runs once per read mode. On a local cluster each step shows the servers' CPU per operation.")
final class SweepCommand implements Callable<Integer> {

    @ParentCommand
    BenchmarkMain parent;

    @ArgGroup(exclusive = true, multiplicity = "1")
    Ladder ladder;

    static final class Ladder {
        @Option(names = "--threads-ladder", split = ",", paramLabel = "N",
                description = "Thread counts, e.g. 1,2,4,8,16 (closed loop, or open loop at --rate).")
        List<Integer> threads;

        @Option(names = "--rate-ladder", split = ",", paramLabel = "OPS",
                description = "Open-loop target rates in ops/s, e.g. 1000,5000,10000 (with --threads threads).")
        List<Double> rates;
    }

    @Option(names = "--step-duration", defaultValue = "10", paramLabel = "TIME", converter = DurationConverter.class,
            description = "Measured time per step: " + DurationConverter.HELP + " (default: ${DEFAULT-VALUE}).")
    Duration stepDuration;

    @Option(names = "--step-warmup", defaultValue = "2", paramLabel = "TIME", converter = DurationConverter.class,
            description = "Warm-up per step, excluded: " + DurationConverter.HELP + " (default: ${DEFAULT-VALUE}).")
    Duration stepWarmup;

    @Option(names = "--read-modes", split = ",", paramLabel = "MODE",
            description = "Run every level once per read mode, e.g. read_index,leader_lease,follower,stale: the read"
                    + " paths compared at rising load (instead of --read-mode).")
    List<String> readModes = List.of();

    @Option(names = "--out", paramLabel = "DIR",
            description = "Write " + Sweep.JSON_FILE + " and " + Sweep.HTML_FILE + " (chart) into DIR.")
    Path out;

    @Mixin
    LoadOptions load;

    @Mixin
    ClusterOptions cluster;

    @Override
    public Integer call() {
        double stepDuration = DurationConverter.seconds(this.stepDuration);
        double stepWarmup = DurationConverter.seconds(this.stepWarmup);
        for (String mode : readModes) {
            if (!ClientConfig.READ_MODES.contains(mode)) {
                throw new UsageException("--read-modes: unknown read mode '" + mode + "' (known: "
                        + String.join(", ", ClientConfig.READ_MODES) + ")");
            }
        }
        if (!readModes.isEmpty() && load.readMode != null) {
            throw new UsageException("--read-modes ladders the read mode: leave out --read-mode");
        }
        Sweep.Plan plan = ladder.threads != null
                ? new Sweep.Plan(Sweep.Kind.THREADS, ladder.threads.stream().map(Integer::doubleValue).toList(),
                stepDuration, stepWarmup, readModes)
                : new Sweep.Plan(Sweep.Kind.RATE, ladder.rates, stepDuration, stepWarmup, readModes);
        load.validate(stepDuration, stepWarmup);
        for (double v : plan.ladder()) {
            plan.stepOptions(load.toWorkload(stepDuration, stepWarmup, load.readMode, load.batching), v);
        }
        try (ClusterSession session = ClusterSession.open(cluster, load.readMode, load.batching, parent.connector,
                parent.stderr)) {
            ClientConfig cc = session.clientConfig();
            WorkloadOptions base = load.toWorkload(stepDuration, stepWarmup, cc.readMode(), cc.batching().enabled());
            List<Long> pids = session.localPids();
            Sweep.Result result = Sweep.run(plan, base, session.client(), parent.stderr,
                    pids.isEmpty() ? null : () -> ServerUsage.cpuNanos(pids));
            Sweep.print(parent.stdout, result);
            if (out != null) {
                Sweep.write(out, result);
                parent.stderr.println("sweep written to " + out.resolve(Sweep.JSON_FILE) + " and "
                        + out.resolve(Sweep.HTML_FILE));
            }
            return BenchmarkMain.verdict(result.errorRateViolation(base.maxErrorRate()), parent.stderr);
        }
    }
}
