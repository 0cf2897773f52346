package io.kvraft.benchmark;

import io.kvraft.client.KvClient;
import io.kvraft.client.KvClients;
import io.kvraft.common.KvException;
import io.kvraft.client.config.ClientConfig;
import io.kvraft.common.config.ConfigException;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.function.Function;

/**
 * {@code java -jar kv-benchmark.jar [options]}: runs the benchmark against a local 3-node cluster it
 * starts (or a running one with --servers/--config), prints the report, and optionally writes the
 * result files. Subcommands: {@code merge}, {@code sweep}, {@code verify}, {@code nemesis}, {@code lock-handover}.
 *
 * <p>Exit codes: 0 ok; 1 the error rate exceeded --max-error-rate (or the run failed); 2 bad usage
 * or configuration.
 */
@Command(name = "kv-benchmark", mixinStandardHelpOptions = true, version = "kv-benchmark 0.1.0",
        sortOptions = false, usageHelpAutoWidth = true,
        subcommands = {MergeCommand.class, SweepCommand.class, VerifyCommand.class,
                io.kvraft.benchmark.nemesis.NemesisCommand.class, LockHandoverCommand.class},
        description = "Load generator for the kv cluster: puts, gets and scans in a mix (--workload), in any read"
                + " mode, or sequences and locks (--workload sequence|allocator|lock); the SOFAJRaft reference report (Dropwizard timers), HdrHistogram percentiles, a table per"
                + " operation type, result files that merge across clients.",
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:ok", "1:error rate over --max-error-rate, or the run failed", "2:bad usage or configuration"})
public final class BenchmarkMain implements Callable<Integer> {

    public static final int EXIT_OK = 0;
    public static final int EXIT_FAILED = 1;
    public static final int EXIT_USAGE = 2;

    @Option(names = "--duration", defaultValue = "30", paramLabel = "TIME", converter = DurationConverter.class,
            description = "Measured time: " + DurationConverter.HELP + " (default: ${DEFAULT-VALUE}).")
    Duration duration;

    @Option(names = "--warmup", defaultValue = "auto", paramLabel = "TIME|auto", converter = WarmupConverter.class,
            description = "Time before the measurement, excluded from the results. auto (the default): until the"
                    + " throughput is stable, its last 10 s within 5%% of each of the two 10 s blocks before, and (on"
                    + " Linux) the JIT compilers of this JVM and the local cluster's used at most 10%% of their CPU in"
                    + " those 10 s; at most 120 s; the line 'warm-up ended after N s: ...' says why. A time is a fixed warm-up: "
                    + DurationConverter.HELP + ".")
    Duration warmupArg; // null = auto

    /** {@code auto} (null) or a duration. */
    static final class WarmupConverter implements CommandLine.ITypeConverter<Duration> {
        @Override
        public Duration convert(String value) {
            return "auto".equalsIgnoreCase(value.trim()) ? null : DurationConverter.parse(value);
        }
    }

    @Mixin
    LoadOptions load;

    @Mixin
    ClusterOptions cluster;

    @Option(names = "--out", paramLabel = "DIR",
            description = "Write result-<client-id>.json and histogram-<client-id>.hlog into DIR.")
    Path out;

    @Option(names = "--record-acked", paramLabel = "FILE",
            description = "Puts write fresh keys, and the key and value of every acknowledged put are appended to"
                    + " FILE (hex, one per line), for `kv-benchmark verify --acked FILE` after a crash drill.")
    Path recordAcked;

    final PrintStream stdout;
    final PrintStream stderr;
    final Function<ClientConfig, KvClient> connector;

    /** Where reports go (for subcommands in other packages). */
    public PrintStream stdout() {
        return stdout;
    }

    /** Where progress lines go. */
    public PrintStream stderr() {
        return stderr;
    }

    /** Makes the client. */
    public Function<ClientConfig, KvClient> connector() {
        return connector;
    }

    public BenchmarkMain(PrintStream stdout, PrintStream stderr, Function<ClientConfig, KvClient> connector) {
        this.stdout = stdout;
        this.stderr = stderr;
        this.connector = connector;
    }

    public static void main(String[] args) {
        if (System.getProperty("logback.configurationFile") == null) {
            System.setProperty("logback.configurationFile", "kv-benchmark-logback.xml");
        }
        // bolt's own logging would print a banner on stdout (into the report) and write under ~/logs
        if (System.getProperty("sofa.middleware.log.disable") == null) {
            System.setProperty("sofa.middleware.log.disable", "true");
        }
        // the report owns stdout; library chatter on System.out (sofa-common-tools prints a banner there
        // unconditionally) goes to stderr with the progress lines
        PrintStream report = System.out;
        System.setOut(System.err);
        System.exit(execute(args, report, System.err, KvClients::connect));
    }

    /** Runs the command line and returns the exit code (no System.exit); {@code connector} makes the client. */
    public static int execute(String[] args, PrintStream out, PrintStream err, Function<ClientConfig, KvClient> connector) {
        CommandLine cmd = new CommandLine(new BenchmarkMain(out, err, connector));
        cmd.setOut(new PrintWriter(out, true));
        cmd.setErr(new PrintWriter(err, true));
        // a bad option value is one line naming the option, as a bad value caught later is; no usage dump
        cmd.setParameterExceptionHandler((ex, args1) -> {
            err.println(ex.getMessage());
            err.flush();
            return EXIT_USAGE;
        });
        cmd.setExecutionExceptionHandler((thrown, commandLine, parseResult) -> {
            Throwable ex = thrown;
            while (ex instanceof java.util.concurrent.CompletionException && ex.getCause() != null) {
                ex = ex.getCause();
            }
            boolean usage = ex instanceof UsageException || ex instanceof ConfigException;
            boolean expected = usage || ex instanceof Preloader.PreloadException || ex instanceof KvException;
            if (!expected) {
                // the trace goes to the log file (kv-benchmark-logback.xml), the console gets one line naming it
                org.slf4j.LoggerFactory.getLogger("kv.trace").error("kv-benchmark: FAILED", ex);
            }
            err.println(usage ? ex.getMessage() : "kv-benchmark: FAILED: " + (expected ? ex.getMessage() : ex)
                    + io.kvraft.common.logging.LogFile.hint());
            err.flush();
            return usage ? EXIT_USAGE : EXIT_FAILED;
        });
        return cmd.execute(args);
    }

    /** The fixed warm-up in seconds, or NaN for auto. */
    private double fixedWarmup() {
        return warmupArg == null ? Double.NaN : DurationConverter.seconds(warmupArg);
    }

    @Override
    public Integer call() {
        double duration = DurationConverter.seconds(this.duration);
        double fixed = fixedWarmup();
        boolean adaptive = Double.isNaN(fixed);
        double warmup = adaptive ? 0 : fixed;
        load.validate(duration, warmup);
        if (recordAcked != null && load.workload != null && load.workload.kind() != WorkloadPreset.Kind.MIX) {
            throw new UsageException("--record-acked records puts: it does not apply to --workload " + load.workload);
        }
        try (ClusterSession session = ClusterSession.open(cluster, load.readMode, load.batching, connector, stderr)) {
            ClientConfig cc = session.clientConfig();
            WorkloadOptions options = load.toWorkload(duration, warmup, cc.readMode(), cc.batching().enabled());
            KeySpace keys = BenchmarkRun.prepare(options, session.client(), stderr);
            ServerUsage usage = session.localPids().isEmpty() ? null
                    : ServerUsage.start(session.localPids(), session.localSettings(), session::localLeaderCounts);
            long warmupOps = 0;
            if (adaptive) {
                AdaptiveWarmup w = AdaptiveWarmup.defaults();
                LoadRunner runner = new LoadRunner(options.withTimes(0.001, w.maxSeconds()), session.client(), keys,
                        NanoClock.SYSTEM, stderr, "").warmingUp(w, CompilerActivity.of(session.localPids()));
                long t0 = System.nanoTime();
                warmupOps = runner.run().warmupOps();
                warmup = (System.nanoTime() - t0) / 1e9;
                stderr.printf(java.util.Locale.ROOT, "warm-up ended after %.0f s: %s%n", warmup,
                        runner.warmupEnd() == null ? "the load stopped" : runner.warmupEnd());
            }
            RunResult result;
            Runnable windowStarted = usage == null ? () -> { } : usage::windowStarted;
            Runnable windowEnded = usage == null ? () -> { } : usage::windowEnded;
            if (recordAcked == null) {
                result = BenchmarkRun.measure(options, session.client(), keys, stderr, "", null,
                        windowStarted, windowEnded);
            } else {
                try (AckedRecorder recorder = AckedRecorder.open(recordAcked, options.keySize())) {
                    result = BenchmarkRun.measure(options, session.client(), keys, stderr, "", recorder,
                            windowStarted, windowEnded);
                    recorder.close();
                    stderr.println("acknowledged puts recorded: " + recorder.recorded() + " in " + recordAcked
                            + " (check them with: kv-benchmark verify --acked " + recordAcked + " --servers ...)");
                }
            }
            result = result.plusWarmupOps(warmupOps); // the report and the result file name the adaptive warm-up's too
            ReportPrinter.printRunReport(stdout, result);
            if (usage != null) {
                usage.print(stdout, result.ops(), duration, result.warmupOps() + result.ops(), warmup + duration);
            }
            if (out != null) {
                Path json = ResultFiles.write(out, result);
                stderr.println("results written to " + json + " and " + ResultFiles.hlogFile(out, result.clientId()));
            }
            return verdict(result.errorRateViolation(options.maxErrorRate()), stderr);
        }
    }

    /** 0, or 1 after printing the one-line reason. */
    static int verdict(Optional<String> violation, PrintStream err) {
        if (violation.isPresent()) {
            err.println("kv-benchmark: FAILED: " + violation.get());
            err.flush();
            return EXIT_FAILED;
        }
        return EXIT_OK;
    }
}
