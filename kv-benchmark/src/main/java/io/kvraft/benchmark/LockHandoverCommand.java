package io.kvraft.benchmark;

import io.kvraft.client.KvClient;
import io.kvraft.client.LockHandle;
import io.kvraft.client.config.ClientConfig;
import io.kvraft.server.launch.ProcessCluster;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * {@code kv-benchmark lock-handover}: how long a lock whose holder died stays taken. Each round a holder process
 * (this jar, started here) takes a fresh lock key with the lease and keeps it with the client's watchdog; this
 * process then waits for the same key in {@code lock()}; after the holder has held it longer than the lease (so
 * its watchdog must have renewed it; a waiter that gets the lock before the kill fails the round) the holder is
 * killed with SIGKILL, by the PID started here, and the time from the kill to the waiter's acquisition is the
 * hand-over. The bar: each hand-over within lease + margin. The holder renews every third of the lease, so the
 * servers let the lock go between two thirds of a lease and a lease after the kill; the kill lands at a random
 * point of the renewal cycle.
 */
@Command(name = "lock-handover", mixinStandardHelpOptions = true, sortOptions = false,
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:every hand-over within --lease + --margin", "1:a hand-over took longer, a waiter got the"
                + " lock while the holder lived, or the drill failed", "2:bad usage or configuration"},
        description = "Lock hand-over drill: a holder process takes a lock with --lease and keeps it alive"
                + " with the client's watchdog, this process waits for it in lock(), the holder is killed with"
                + " kill -9 (only the PID started here); prints the time from the kill to the waiter's acquisition"
                + " per round and min/median/max, against the bar lease + margin. Against the local 3-node"
                + " cluster it starts, or --servers/--config.")
public final class LockHandoverCommand implements Callable<Integer> {

    static final String HELD = "HELD ";
    static final String LOST = "LOST";

    @ParentCommand
    BenchmarkMain parent;

    @Option(names = "--rounds", defaultValue = "5", paramLabel = "N",
            description = "Rounds, each on a fresh lock key with a fresh holder process (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--lease", defaultValue = "3s", paramLabel = "TIME", converter = DurationConverter.class,
            description = "The holder's and the waiter's lease: " + DurationConverter.HELP + " (default: ${DEFAULT-VALUE}).")
    Duration lease;

    @Option(names = "--margin", defaultValue = "1s", paramLabel = "TIME", converter = DurationConverter.class,
            description = "Allowed beyond the lease for the waiter's poll and the round trips (default: ${DEFAULT-VALUE}).")
    Duration margin;

    @Option(names = "--holder-jvm-arg", paramLabel = "ARG",
            description = "An extra JVM argument for the holder processes (repeatable) (default: -Xmx256m).")
    List<String> holderJvmArgs = new ArrayList<>();

    @Option(names = "--holder-key", hidden = true, paramLabel = "HEX",
            description = "Internal: run as the holder of this key (hex): lock it, print '" + HELD + "<token>', keep"
                    + " it until killed or stdin closes.")
    String holderKey;

    @Mixin
    ClusterOptions cluster;

    /** One round's figures. */
    record Round(long holderToken, long waiterToken, double heldSeconds, double handoverSeconds) {
    }

    @Override
    public Integer call() throws Exception {
        if (rounds < 1) {
            throw new UsageException("--rounds must be at least 1, got " + rounds);
        }
        long leaseMs = lease.toMillis();
        if (leaseMs < 3 || leaseMs > WorkloadOptions.MAX_LOCK_LEASE_MS) {
            throw new UsageException("--lease must be 3 ms to 1 day, got " + lease.toMillis() + " ms");
        }
        if (holderKey != null) {
            return hold(HexFormat.of().parseHex(holderKey), leaseMs);
        }
        PrintStream out = parent.stdout();
        PrintStream err = parent.stderr();
        try (ClusterSession session = ClusterSession.open(cluster, null, null, parent.connector(), err)) {
            KvClient client = session.client();
            List<String> holderArgs = holderArgs(session.clientConfig());
            double load = ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
            out.printf(Locale.ROOT, "lock-handover: %d rounds, lease %d ms, bar lease + margin = %d ms; load average"
                    + " %.2f at the start%n", rounds, leaseMs, leaseMs + margin.toMillis(), load);
            SplittableRandom random = new SplittableRandom();
            List<Round> done = new ArrayList<>();
            boolean ok = true;
            for (int i = 1; i <= rounds; i++) {
                byte[] key = ("lock-handover/" + ProcessHandle.current().pid() + "/" + System.nanoTime() + "/" + i)
                        .getBytes(StandardCharsets.US_ASCII);
                // past the lease, so the holder's watchdog must have renewed; the kill at a random point of its cycle
                long holdMs = leaseMs + random.nextLong(leaseMs / 3 + 1);
                Round r = round(client, holderArgs, key, leaseMs, holdMs, err);
                done.add(r);
                boolean within = r.handoverSeconds() * 1000 <= leaseMs + margin.toMillis();
                ok &= within;
                out.printf(Locale.ROOT, "round %d: holder token %d killed after holding %.2f s; waiter acquired %.3f s"
                                + " after the kill, token %d%s%n", i, r.holderToken(), r.heldSeconds(),
                        r.handoverSeconds(), r.waiterToken(), within ? "" : "  OVER THE BAR");
            }
            double[] s = done.stream().mapToDouble(Round::handoverSeconds).sorted().toArray();
            double median = s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
            out.printf(Locale.ROOT, "hand-over after kill -9: min %.3f s, median %.3f s, max %.3f s over %d rounds"
                            + " (lease %.3f s; bar: each <= %.3f s): %s%n", s[0], median, s[s.length - 1], s.length,
                    leaseMs / 1000.0, (leaseMs + margin.toMillis()) / 1000.0, ok ? "PASS" : "FAIL");
            out.flush();
            return ok ? BenchmarkMain.EXIT_OK : BenchmarkMain.EXIT_FAILED;
        }
    }

    /** The holder's command line but for the key: this JVM's java and class path, the cluster's client config. */
    private List<String> holderArgs(ClientConfig config) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(ProcessCluster.OPENS);
        cmd.addAll(holderJvmArgs.isEmpty() ? List.of("-Xmx256m") : holderJvmArgs);
        cmd.addAll(List.of("-Dsofa.middleware.log.disable=true", "-cp", System.getProperty("java.class.path"),
                BenchmarkMain.class.getName(), "lock-handover", "--lease", lease.toMillis() + "ms"));
        Path yaml = cluster.config != null ? cluster.config
                : cluster.embedded() ? cluster.effectiveConfDir().resolve("client.yaml") : null;
        if (yaml != null && Files.isRegularFile(yaml)) {
            cmd.addAll(List.of("--config", yaml.toString()));
        }
        cmd.addAll(List.of("--servers", String.join(",", config.servers())));
        return cmd;
    }

    private Round round(KvClient client, List<String> holderArgs, byte[] key, long leaseMs, long holdMs,
                        PrintStream err) throws Exception {
        List<String> cmd = new ArrayList<>(holderArgs);
        cmd.addAll(List.of("--holder-key", HexFormat.of().formatHex(key)));
        Process holder = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        CompletableFuture<LockHandle> waiter = null;
        try {
            BufferedReader lines = new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8));
            String line = CompletableFuture.supplyAsync(() -> readHeld(lines)).get(120, TimeUnit.SECONDS);
            if (line == null || !line.startsWith(HELD)) {
                throw new IllegalStateException("the holder (pid " + holder.pid() + ") did not take the lock: "
                        + (line == null ? "it exited with code " + holder.waitFor() : line));
            }
            long holderToken = Long.parseLong(line.substring(HELD.length()).trim());
            long heldFrom = System.nanoTime();
            long[] acquiredAt = new long[1];
            waiter = client.lock(key, leaseMs).whenComplete((h, e) -> acquiredAt[0] = System.nanoTime());
            try {
                LockHandle early = waiter.get(holdMs, TimeUnit.MILLISECONDS);
                early.close();
                throw new IllegalStateException("the waiter got the lock while the holder (pid " + holder.pid()
                        + ") was alive, " + (System.nanoTime() - heldFrom) / 1_000_000 + " ms after it took it with a "
                        + leaseMs + " ms lease: its watchdog did not keep it");
            } catch (TimeoutException expected) {
                // the holder still holds it: its watchdog renewed it past the lease
            }
            if (!holder.isAlive()) {
                throw new IllegalStateException("the holder (pid " + holder.pid() + ") died before the kill, code "
                        + holder.exitValue());
            }
            long killed = System.nanoTime();
            holder.destroyForcibly(); // SIGKILL to the PID started above, nothing else
            LockHandle handle = waiter.get(leaseMs + margin.toMillis() + 60_000, TimeUnit.MILLISECONDS);
            long acquired = acquiredAt[0]; // written before get() returned: get waits for the whenComplete stage
            try (handle) {
                if (handle.token() <= holderToken) {
                    throw new IllegalStateException("the waiter's fencing token " + handle.token()
                            + " is not above the dead holder's " + holderToken);
                }
                return new Round(holderToken, handle.token(), (killed - heldFrom) / 1e9, (acquired - killed) / 1e9);
            }
        } catch (ExecutionException e) {
            throw new IllegalStateException("round failed: " + e.getCause(), e.getCause());
        } finally {
            if (holder.isAlive()) {
                holder.destroyForcibly();
            }
            if (!holder.waitFor(30, TimeUnit.SECONDS)) {
                err.println("holder pid " + holder.pid() + " did not exit within 30 s of SIGKILL");
            }
            if (waiter != null && !waiter.isDone()) {
                waiter.cancel(true);
            }
        }
    }

    private static String readHeld(BufferedReader lines) {
        try {
            return lines.readLine();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The holder process: takes the key, says so, and keeps it (the watchdog renews) until killed or orphaned. */
    private int hold(byte[] key, long leaseMs) throws Exception {
        try (ClusterSession session = ClusterSession.open(cluster, null, null, parent.connector(), parent.stderr())) {
            LockHandle handle = session.client().lock(key, leaseMs).get(60, TimeUnit.SECONDS);
            PrintStream out = parent.stdout();
            out.println(HELD + handle.token());
            out.flush();
            // the parent keeps stdin open; when it dies without killing us, EOF ends the holding
            CompletableFuture<Void> orphaned = CompletableFuture.runAsync(() -> {
                try {
                    while (System.in.read() >= 0) {
                        // nothing is sent
                    }
                } catch (IOException ignored) {
                    // closed
                }
            });
            CompletableFuture.anyOf(orphaned, handle.lost()).join();
            if (handle.lost().isDone()) {
                out.println(LOST);
                out.flush();
                return 3;
            }
            return BenchmarkMain.EXIT_OK;
        }
    }
}
