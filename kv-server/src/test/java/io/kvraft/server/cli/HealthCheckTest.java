package io.kvraft.server.cli;

import io.kvraft.client.cli.KvCtl;
import io.kvraft.server.InProcessCluster;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** {@code kv-client health} (the containers' healthcheck) against real servers. */
class HealthCheckTest {

    @TempDir
    Path dir;

    private record Run(int code, String out, String err) {
    }

    private static Run health(String server) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = KvCtl.run(new String[]{"--servers", server, "health", "--timeout-ms", "3000"},
                new PrintWriter(out, true), new PrintWriter(err, true));
        return new Run(code, out.toString(), err.toString());
    }

    @Test
    void when_allRegionsLed_then_0_and_when_quorumLost_then_1() throws Exception {
        try (InProcessCluster cluster = InProcessCluster.start(3, 6, dir, "memory")) {
            String first = cluster.endpoints().get(0);
            // (the balancer's leadership transfers leave a region leaderless for a moment: judge one run at a time)
            Run led = await().atMost(120, SECONDS).pollInterval(Duration.ofMillis(500))
                    .until(() -> health(first), r -> r.code() == 0);
            assertThat(led.out()).startsWith("healthy: 6 regions, all led (")
                    .containsAnyOf(cluster.endpoints().toArray(String[]::new));

            // the last node standing loses its leaders once its leases run out: no region is led
            cluster.stopNode(1);
            cluster.stopNode(2);
            Run lost = await().atMost(60, SECONDS).pollInterval(Duration.ofMillis(500))
                    .until(() -> health(first), r -> r.code() == 1);
            assertThat(lost.err()).startsWith("unhealthy: ").contains("of 6 regions have no leader");
            assertThat(lost.out()).isEmpty();
        }
    }

    @Test
    void when_noServerAnswers_then_3() {
        Run r = health("127.0.0.1:" + InProcessCluster.freePort());
        assertThat(r.code()).as(r.err()).isEqualTo(3);
    }
}
