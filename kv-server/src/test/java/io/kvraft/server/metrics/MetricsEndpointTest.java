package io.kvraft.server.metrics;

import io.kvraft.client.KvClient;
import io.kvraft.client.KvClients;
import io.kvraft.client.cli.KvCtl;
import io.kvraft.client.config.ClientConfig;
import io.kvraft.server.KvServer;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.config.ServerConfig.BalanceConfig;
import io.kvraft.server.config.ServerConfig.ClusterConfig;
import io.kvraft.server.config.ServerConfig.MetricsConfig;
import io.kvraft.server.config.ServerConfig.RaftConfig;
import io.kvraft.server.config.ServerConfig.StoreConfig;
import io.kvraft.server.launch.LocalClusterConfigs;
import io.kvraft.server.region.Region;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.management.ObjectName;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Three nodes in this JVM with metrics.port set: after a mixed load, each node's /metrics (Prometheus
 * text over HTTP) has the KV, region, node and JVM metrics with counts that add up to the load, JMX
 * has the MBeans, and {@code kv-client status} shows the cluster.
 */
class MetricsEndpointTest {

    private static final int REGIONS = 6;

    @TempDir
    Path dir;

    private final List<KvServer> servers = new ArrayList<>();
    private final List<Integer> metricsPorts = new ArrayList<>();

    @AfterEach
    void stop() {
        servers.forEach(s -> {
            if (s != null) {
                s.close();
            }
        });
    }

    private List<String> start() throws Exception {
        List<String> peers = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            peers.add("127.0.0.1:" + LocalClusterConfigs.freePort());
            metricsPorts.add(LocalClusterConfigs.freePort());
        }
        RaftConfig raft = new RaftConfig(1000, 500, 5, false, 0, true, 256, 2, 4096, 1024, RaftConfig.LOG_SHARED, 2);
        for (int i = 0; i < 3; i++) {
            servers.add(KvServer.start(new ServerConfig(peers.get(i), dir.resolve("n" + i).toString(),
                    new ClusterConfig(peers, REGIONS, null), new StoreConfig("memory", null, null, null), raft, null,
                    new BalanceConfig(true, 200)).withMetrics(new MetricsConfig(metricsPorts.get(i), "127.0.0.1", true))));
        }
        // the balancer has done its work (two leaders per node) so leaders stay put while the test reads them
        await().atMost(120, SECONDS).until(() -> servers.stream().allMatch(s -> s.leaderCount() == REGIONS / 3));
        return peers;
    }

    private String scrape(int node) throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + metricsPorts.get(node) + "/metrics")).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(200);
        return r.body();
    }

    /** Sum of the values of every sample named {@code name} whose label text contains {@code labelPart}. */
    private static double sum(String text, String name, String labelPart) {
        double total = 0;
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name) + "(\\{[^}]*\\})? (\\S+)$").matcher(text);
        while (m.find()) {
            String labels = m.group(1) == null ? "" : m.group(1);
            if (labels.contains(labelPart)) {
                total += Double.parseDouble(m.group(2));
            }
        }
        return total;
    }

    @Test
    void when_clusterServesLoad_then_metricsEndpointsAndJmxAndStatusShowIt() throws Exception {
        List<String> peers = start();
        int puts = 3000;
        try (KvClient client = KvClients.connect(ClientConfig.of(peers))) {
            List<CompletableFuture<?>> ops = new ArrayList<>();
            for (int i = 0; i < puts; i++) {
                ops.add(client.put(key(i), ("v" + i).getBytes(StandardCharsets.UTF_8)));
            }
            CompletableFuture.allOf(ops.toArray(CompletableFuture[]::new)).join();
            ops.clear();
            for (int i = 0; i < 500; i++) {
                ops.add(client.get(key(i)));
            }
            for (int i = 0; i < 50; i++) {
                ops.add(client.delete(key(i)));
                ops.add(client.compareAndPut(key(1000 + i), ("v" + (1000 + i)).getBytes(StandardCharsets.UTF_8),
                        "w".getBytes(StandardCharsets.UTF_8)));
            }
            CompletableFuture.allOf(ops.toArray(CompletableFuture[]::new)).join();
        }

        // The balancer may move a leader between the three scrapes, so a region can be counted on no node or on
        // two; scrape again until one round sees exactly one leader per region.
        List<String> texts = new ArrayList<>();
        await().atMost(60, SECONDS).untilAsserted(() -> {
            texts.clear();
            for (int i = 0; i < 3; i++) {
                texts.add(scrape(i));
            }
            String round = String.join("\n", texts);
            for (int r = 1; r <= REGIONS; r++) {
                assertThat(sum(round, "kv_region_leader", "region=\"" + r + "\"")).as("leaders of region %d", r).isEqualTo(1);
            }
            assertThat(sum(round, "kv_node_regions_led", "")).isEqualTo(REGIONS);
        });
        String all = String.join("\n", texts);
        System.out.println("---- /metrics of node 1 ----\n" + texts.get(0));

        // KV operations: acknowledged counts add up over the nodes; latency summaries per type
        assertThat(sum(all, "kv_ops_total", "type=\"put\"")).isGreaterThanOrEqualTo(puts);
        assertThat(sum(all, "kv_ops_total", "type=\"get\"")).isGreaterThanOrEqualTo(500);
        assertThat(sum(all, "kv_ops_total", "type=\"delete\"")).isGreaterThanOrEqualTo(50);
        assertThat(sum(all, "kv_ops_total", "type=\"cas\"")).isGreaterThanOrEqualTo(50);
        for (String type : List.of("put", "get", "delete", "cas")) {
            assertThat(sum(all, "kv_request_seconds_count", "type=\"" + type + "\"")).as(type).isPositive();
            assertThat(all).containsPattern("kv_request_seconds\\{type=\"" + type + "\",quantile=\"0.99\",?\\} ");
        }
        assertThat(all).contains("kv_errors_total{code=\"NOT_LEADER\"");

        // per region (one leader each, checked above): indexes, timings
        for (int r = 1; r <= REGIONS; r++) {
            String region = "region=\"" + r + "\"";
            assertThat(sum(all, "kv_region_applied_index", region)).as("applied, region %d", r).isPositive();
            assertThat(sum(all, "kv_region_committed_index", region)).isPositive();
            assertThat(sum(all, "kv_region_last_log_index", region)).isPositive();
            assertThat(sum(all, "kv_region_term", region)).isPositive();
            assertThat(sum(all, "kv_region_apply_seconds_count", region)).isPositive();
            assertThat(sum(all, "kv_region_commit_seconds_count", region)).isPositive();
        }
        assertThat(sum(all, "kv_region_read_index_seconds_count", "")).isPositive();
        for (String name : List.of("kv_region_state", "kv_region_snapshot_index", "kv_region_snapshot_timestamp_seconds",
                "kv_region_log_entries_since_snapshot", "kv_node_requests_in_flight", "kv_node_queued_write_requests",
                "kv_node_queued_reads", "kv_region_queued_write_requests", "kv_region_queued_reads")) {
            assertThat(all).as(name).containsPattern("(?m)^" + name + "[{ ]");
        }
        // per node and JVM
        assertThat(all).containsPattern("(?m)^kv_node_rpc_executor_queued ").containsPattern("(?m)^kv_node_rpc_executor_active ");
        assertThat(sum(all, "kv_node_rpc_executor_queued", "")).as("bolt's executor is found").isGreaterThanOrEqualTo(0);
        assertThat(sum(all, "kv_node_rpc_executor_active", "")).isGreaterThanOrEqualTo(0);
        for (String node : texts) {
            // raft.appendEntriesThreads 2: every follower has served AppendEntries on its pool (-1 would mean jraft's)
            assertThat(sum(node, "kv_node_append_entries_threads", "")).isBetween(1.0, 64.0);
            assertThat(sum(node, "kv_node_append_entries_queued", "")).isGreaterThanOrEqualTo(0);
            assertThat(sum(node, "kv_node_append_entries_received", "")).as("every node follows some regions")
                    .isPositive();
        }
        assertThat(sum(all, "kv_node_write_ops", "")).isGreaterThanOrEqualTo(puts);
        assertThat(sum(all, "jvm_memory_heap_used", "")).isPositive();
        assertThat(all).contains("jvm_gc_collections{gc=").contains("jvm_threads_count");

        // every metric the shipped Grafana dashboard queries is served
        for (String name : MonitoringFilesTest.metricNames()) {
            assertThat(all).as("dashboard metric %s", name).containsPattern("(?m)^" + name + "[{ ]");
        }

        // a snapshot shows up as its index and time
        Region first = servers.get(0).host().region(1);
        CompletableFuture<Boolean> snap = new CompletableFuture<>();
        first.node().snapshot(st -> snap.complete(st.isOk()));
        assertThat(snap.get(60, SECONDS)).isTrue();
        String after = scrape(0);
        assertThat(sum(after, "kv_region_snapshot_index", "region=\"1\"")).isPositive();
        assertThat(sum(after, "kv_region_snapshot_timestamp_seconds", "region=\"1\"")).isPositive();

        // JMX
        var mbeans = ManagementFactory.getPlatformMBeanServer()
                .queryNames(new ObjectName("io.kvraft." + peers.get(0).replace(':', '-') + ":*"), null);
        assertThat(mbeans).extracting(ObjectName::toString).anyMatch(n -> n.contains("kv.ops.put"));

        // kv-client status, from the Regions answers and these endpoints
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = KvCtl.run(new String[]{"--servers", peers.get(0), "status", "--interval-ms", "200"},
                new PrintWriter(out, true), new PrintWriter(err, true));
        System.out.println("---- kv-client status ----\n" + out);
        assertThat(code).as(err.toString()).isZero();
        assertThat(out.toString()).contains("cluster: 3 of 3 nodes up, " + REGIONS + " regions, " + REGIONS + " led")
                .containsPattern("(?m)^1 +127\\.0\\.0\\.1:\\d+ +up +\\d+ ")
                .containsPattern("\\d+\\.\\d ms") // p99 from /metrics
                .containsPattern("(?m)^1 +#\\d +\\d+ ");

        // a node that is down shows as such, and the exit code says so
        servers.get(2).close();
        servers.set(2, null);
        out = new StringWriter();
        code = KvCtl.run(new String[]{"--servers", peers.get(0), "status", "--interval-ms", "0"},
                new PrintWriter(out, true), new PrintWriter(new StringWriter(), true));
        assertThat(code).isEqualTo(1);
        assertThat(out.toString()).contains("2 of 3 nodes up").contains(peers.get(2)).contains("down");
    }

    /** Keys spread over the whole key space, so every region gets writes. */
    private static byte[] key(int i) {
        long h = i * 0x9E3779B97F4A7C15L;
        return java.nio.ByteBuffer.allocate(12).putLong(h ^ (h >>> 29)).putInt(i).array();
    }
}
