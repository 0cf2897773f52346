package io.kvraft.server;

import io.kvraft.common.KvException;
import io.kvraft.common.ErrorCode;
import io.kvraft.server.region.Region;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What the forced-recovery tests share: the admin CLI against the live nodes, applied indexes, refusals. */
final class RecoveryTests {

    private RecoveryTests() {
    }

    record Run(int code, String out, String err) {
    }

    /** Runs the admin CLI ({@code kv-client}) with {@code --servers} naming the cluster's running nodes. */
    static Run cli(InProcessCluster cluster, String... args) {
        List<String> a = new ArrayList<>();
        for (int i = 0; i < cluster.size(); i++) {
            if (cluster.node(i) != null) {
                a.add(cluster.endpoints().get(i));
            }
        }
        List<String> all = new ArrayList<>(List.of("--servers", String.join(",", a)));
        all.addAll(List.of(args));
        java.io.StringWriter out = new java.io.StringWriter();
        java.io.StringWriter err = new java.io.StringWriter();
        int code = io.kvraft.client.cli.KvCtl.run(all.toArray(String[]::new), new java.io.PrintWriter(out, true),
                new java.io.PrintWriter(err, true));
        return new Run(code, out.toString(), err.toString());
    }

    /** The highest applied index of region {@code r} among its running replicas ({@code max}), or the lowest. */
    static long applied(InProcessCluster cluster, int r, boolean max) {
        long out = max ? 0 : Long.MAX_VALUE;
        for (int i = 0; i < cluster.size(); i++) {
            Region x = cluster.node(i) == null ? null : cluster.node(i).host().region(r);
            if (x != null) {
                out = max ? Math.max(out, x.info().getAppliedIndex()) : Math.min(out, x.info().getAppliedIndex());
            }
        }
        return out;
    }

    /**
     * What a failed recovery's assertion shows of the survivor: jraft's own description of its node (state, term,
     * configuration, timers) and the stacks of the JVM's shared jraft timer threads, which run every replica's
     * election.
     */
    static String jraftState(Region r) {
        StringBuilder b = new StringBuilder("\n-- jraft's description of the survivor's replica:\n");
        com.alipay.sofa.jraft.Node n = r.node();
        if (n == null) {
            b.append("not running\n");
        } else {
            java.io.StringWriter w = new java.io.StringWriter();
            n.describe(new com.alipay.sofa.jraft.util.Describer.DefaultPrinter(new java.io.PrintWriter(w, true)));
            b.append(w);
        }
        for (java.lang.management.ThreadInfo t : java.lang.management.ManagementFactory.getThreadMXBean()
                .dumpAllThreads(false, false)) {
            if (t.getThreadName().contains("Timer")) {
                b.append(t.getThreadName()).append(' ').append(t.getThreadState()).append('\n');
                for (StackTraceElement e : java.util.Arrays.copyOf(t.getStackTrace(), Math.min(16, t.getStackTrace().length))) {
                    b.append("    at ").append(e).append('\n');
                }
            }
        }
        return b.toString();
    }

    /**
     * As {@link #assertRefused}, once {@code call} fails other than UNAVAILABLE: a plan answers that (try again) while
     * a live node did not list its regions in time.
     */
    static void assertRefusedOnceAnswered(Runnable call, ErrorCode code, String words) {
        KvException last = org.awaitility.Awaitility.await().atMost(60, java.util.concurrent.TimeUnit.SECONDS)
                .until(() -> {
                    try {
                        call.run();
                        return null;
                    } catch (RuntimeException e) {
                        return KvException.unwrap(e instanceof CompletionException ? e : new CompletionException(e));
                    }
                }, k -> k == null || k.code() != ErrorCode.UNAVAILABLE);
        assertThat(last).as("refused").isNotNull();
        assertThat(last.code()).as(last.getMessage()).isEqualTo(code);
        assertThat(last.getMessage()).contains(words);
    }

    /** Asserts that {@code call} fails with a KvException of {@code code} whose message contains {@code words}. */
    static void assertRefused(Runnable call, ErrorCode code, String words) {
        assertThatThrownBy(call::run).satisfies(e -> {
            KvException k = KvException.unwrap(e instanceof CompletionException ? e : new CompletionException(e));
            assertThat(k.code()).as(k.getMessage()).isEqualTo(code);
            assertThat(k.getMessage()).contains(words);
        });
    }
}
