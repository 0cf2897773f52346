package io.kvraft.server.cli;

import io.kvraft.client.KvClient;
import io.kvraft.client.cli.KvCtl;
import io.kvraft.server.InProcessCluster;
import io.kvraft.server.config.ServerConfig.PlacementConfig;
import io.kvraft.server.config.RaftConfig;
import io.kvraft.server.config.ServerConfig.ReplicationConfig;
import io.kvraft.server.config.ServerConfig.SplitConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static io.kvraft.client.KvClient.sync;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code node list}, {@code node drain} and {@code node remove} of the admin CLI against four in-process servers with 3
 * replicas per region: a drained node ends holding no replica, every region keeps three, every key reads back; a drain
 * that would leave fewer UP nodes than replicas per region is refused with nothing changed; a drained node is removed.
 */
@Timeout(value = 300, unit = SECONDS)
class NodeDrainCliTest {

    private static final int REGIONS = 4;
    private static final int KEYS = 200;

    @TempDir
    Path dir;

    private record Run(int code, String out, String err) {
    }

    private static Run cli(InProcessCluster cluster, String... args) {
        List<String> a = new ArrayList<>(List.of("--servers", String.join(",", cluster.endpoints())));
        a.addAll(List.of(args));
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = KvCtl.run(a.toArray(String[]::new), new PrintWriter(out, true), new PrintWriter(err, true));
        return new Run(code, out.toString(), err.toString());
    }

    private static byte[] key(int i) {
        byte[] tail = String.format("k%05d", i).getBytes(StandardCharsets.US_ASCII);
        byte[] k = new byte[1 + tail.length];
        k[0] = (byte) (i * 251 % 256); // spread over the 4 regions
        System.arraycopy(tail, 0, k, 1, tail.length);
        return k;
    }

    @Test
    void when_aNodeIsDrained_then_itHoldsNoReplica_everyRegionKeepsThree_andEveryKeyReadsBack() throws Exception {
        try (InProcessCluster cluster = InProcessCluster.start(4, REGIONS, dir, "memory", RaftConfig.LOG_SHARED,
                c -> c.withReplication(new ReplicationConfig(3)).withSplit(new SplitConfig(false, null, null, null, null))
                        .withPlacement(new PlacementConfig(true, 200, 60_000L, null)))) {
            await().atMost(60, SECONDS).until(cluster::allRegionsLed);
            List<String> nodes = cluster.endpoints();
            KvClient client = cluster.client();
            for (int i = 0; i < KEYS; i++) {
                sync(client.put(key(i), key(i)));
            }

            await().atMost(60, SECONDS).untilAsserted(() -> {
                Run listed = cli(cluster, "node", "list");
                assertThat(listed.code()).as(listed.out() + listed.err()).isZero();
                for (String n : nodes) {
                    assertThat(listed.out()).containsPattern(java.util.regex.Pattern.quote(n) + "\\s+up\\s+yes\\s+3\\s+\\d+");
                }
            });

            Run drained = cli(cluster, "node", "drain", nodes.get(0));

            assertThat(drained.code()).as(drained.out() + drained.err()).isZero();
            assertThat(drained.out()).contains("node " + nodes.get(0) + " drained: holds no replica");
            await().atMost(60, SECONDS).untilAsserted(() -> {
                for (int r = 1; r <= REGIONS; r++) {
                    assertThat(cluster.hostsOf(r)).as("region %d's nodes", r).hasSize(3).doesNotContain(nodes.get(0));
                }
            });
            assertThat(cluster.node(0).host().regions()).isEmpty();
            for (int i = 0; i < KEYS; i++) {
                assertThat(sync(client.get(key(i)))).as("key %d", i).isEqualTo(key(i));
            }
            Run after = cli(cluster, "node", "list");
            assertThat(after.out()).containsPattern(java.util.regex.Pattern.quote(nodes.get(0)) + "\\s+draining\\s+yes\\s+0\\s+0");

            // three UP nodes left for 3 replicas a region: a second drain is refused, nothing changes
            Run refused = cli(cluster, "node", "drain", nodes.get(1));
            assertThat(refused.code()).isEqualTo(1);
            assertThat(refused.err()).contains("replication.factor");
            assertThat(cluster.hostsOf(1)).contains(nodes.get(1));
            assertThat(cli(cluster, "node", "drain", "127.0.0.1:1").err()).contains("is not a node of the cluster");

            Run removed = cli(cluster, "node", "remove", nodes.get(0));
            assertThat(removed.code()).as(removed.out() + removed.err()).isZero();
            assertThat(cli(cluster, "node", "list").out()).containsPattern(java.util.regex.Pattern.quote(nodes.get(0))
                    + "\\s+removed");
        }
    }
}
