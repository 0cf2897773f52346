package io.kvraft.server;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import sun.misc.Signal;
import sun.misc.SignalHandler;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * jraft must not keep SIGUSR2 from the JVM. Each case runs in a JVM of its own, since jraft takes the signal
 * when its node class loads, once per JVM: the probe loads jraft with or without {@link JvmSignals}, records
 * a busy thread with JFR for two seconds, and prints which handler holds SIGUSR2 and how many execution
 * samples JFR kept; jraft's handler, when it holds the signal, writes its dump files into the probe's
 * working directory.
 */
class JvmSignalsTest {

    private static final String JRAFT_HANDLER = "com.alipay.sofa.jraft.util.SignalHelper$SignalHandlerAdapter";

    @TempDir
    Path dir;

    @Test
    void when_jraftLoadsOnItsOwn_then_itsHandlerHoldsUsr2() throws Exception {
        Probe probe = runProbe(false);
        assertThat(probe.handler).isEqualTo(JRAFT_HANDLER);
        assertThat(probe.jraftFiles).as("files jraft's handler wrote on JFR's signals").isNotEmpty();
    }

    @Test
    void when_theServerLoadsJraft_then_theJvmKeepsUsr2AndJfrSamples() throws Exception {
        Probe probe = runProbe(true);
        assertThat(probe.handler).isNotEqualTo(JRAFT_HANDLER);
        assertThat(probe.samples).as("JFR execution samples of a busy thread").isGreaterThanOrEqualTo(ProbeMain.SAMPLES);
        assertThat(probe.jraftFiles).isEmpty();
    }

    private record Probe(String handler, long samples, List<String> jraftFiles) {
    }

    private Probe runProbe(boolean guard) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx128m", "-cp", System.getProperty("java.class.path"), ProbeMain.class.getName(),
                String.valueOf(guard), dir.resolve("probe.jfr").toString()));
        Path work = Files.createDirectories(dir.resolve("work")); // jraft's handler writes its files here
        Process p = new ProcessBuilder(cmd).directory(work.toFile()).redirectErrorStream(true).start();
        try {
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(p.waitFor(120, TimeUnit.SECONDS)).as(out).isTrue();
            assertThat(p.exitValue()).as(out).isZero();
            String line = out.lines().filter(l -> l.startsWith("probe ")).findFirst().orElseThrow(() -> new AssertionError(out));
            String[] f = line.split(" ");
            List<String> files;
            try (Stream<Path> listing = Files.list(work)) {
                files = listing.map(path -> path.getFileName().toString()).filter(n -> n.contains(".log")).toList();
            }
            return new Probe(f[1], Long.parseLong(f[2]), files);
        } finally {
            p.destroyForcibly();
        }
    }

    /**
     * Runs in the child JVM: {@code guard jfrFile}. Keeps a thread busy under JFR's sampler until what the
     * test looks for has happened: with the guard, {@link #SAMPLES} samples of it; without, jraft's handler
     * writing a file on one of JFR's signals. A deadline far past either (a minute) ends a run where it never does.
     */
    public static final class ProbeMain {
        static final int SAMPLES = 20;

        /** Busy Java code JFR can walk (a tight loop of intrinsics mostly yields no sample, handler or not). */
        static int work(int seed) {
            StringBuilder sb = new StringBuilder();
            for (int k = 0; k < 50; k++) {
                sb.append(k ^ seed);
            }
            return sb.toString().hashCode();
        }

        public static void main(String[] args) throws Exception {
            if (Boolean.parseBoolean(args[0])) {
                JvmSignals.loadJraftKeepingUsr2();
            } else {
                Class.forName("com.alipay.sofa.jraft.core.NodeImpl");
            }
            boolean guard = Boolean.parseBoolean(args[0]);
            java.util.concurrent.atomic.AtomicLong samples = new java.util.concurrent.atomic.AtomicLong();
            try (jdk.jfr.consumer.RecordingStream recording = new jdk.jfr.consumer.RecordingStream()) {
                recording.enable("jdk.ExecutionSample").withPeriod(Duration.ofMillis(10));
                recording.onEvent("jdk.ExecutionSample", e -> samples.incrementAndGet());
                recording.startAsync();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                int x = 0;
                int round = 0;
                while (System.nanoTime() < deadline
                        && !(guard ? samples.get() >= SAMPLES : round++ % 1000 == 0 && jraftWroteAFile())) {
                    x += work(x);
                }
                System.out.println("spun " + x);
            }
            Signal usr2 = new Signal("USR2");
            SignalHandler holder = Signal.handle(usr2, sig -> { });
            Signal.handle(usr2, holder);
            System.out.println("probe " + holder.getClass().getName() + " " + samples.get());
        }

        /** jraft's SIGUSR2 handler describes the node into a file in the working directory. */
        private static boolean jraftWroteAFile() throws java.io.IOException {
            try (Stream<Path> listing = Files.list(Path.of("."))) {
                return listing.anyMatch(f -> f.getFileName().toString().contains(".log"));
            }
        }
    }
}
