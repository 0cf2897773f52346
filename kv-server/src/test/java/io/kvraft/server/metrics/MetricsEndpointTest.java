package io.kvraft.server.metrics;

import io.kvraft.client.KvClient;
import io.kvraft.client.KvClients;
import io.kvraft.client.cli.KvCtl;
import io.kvraft.client.config.ClientConfig;
import io.kvraft.server.KvServer;
import io.kvraft.server.config.ServerConfig;
import io.kvraft.server.config.ServerConfig.BalanceConfig;
import io.kvraft.server.config.ClusterConfig;
import io.kvraft.server.config.ServerConfig.MetricsConfig;
import io.kvraft.server.config.RaftConfig;
import io.kvraft.server.config.StoreConfig;
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
 * text over HTTP) has the KV, region, node and JVM metrics with counts that add up to the load and
 * moved since before it, latencies as histograms, names that {@code promtool check metrics} accepts,
 * JMX has the gauges' MBeans, and {@code kv-client status} shows the cluster.
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
        List<Integer> ports = LocalClusterConfigs.freePorts(6); // distinct: 3 RPC ports, 3 metrics ports
        for (int i = 0; i < 3; i++) {
            peers.add("127.0.0.1:" + ports.get(i));
            metricsPorts.add(ports.get(3 + i));
        }
        RaftConfig raft = new RaftConfig(1000, 500, 5, false, 0, true, 256, 2, 4096, 1024, RaftConfig.LOG_SHARED, 2, null);
        for (int i = 0; i < 3; i++) {
            servers.add(KvServer.start(new ServerConfig(peers.get(i), dir.resolve("n" + i).toString(),
                    new ClusterConfig(peers, REGIONS, null), StoreConfig.DEFAULT, raft, null,
                    new BalanceConfig(true, 200, null)).withMetrics(new MetricsConfig(metricsPorts.get(i), "127.0.0.1", true))));
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
        String beforeLoad = scrape(0);
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

        // KV operations: acknowledged counts add up over the nodes; latency histograms per type
        assertThat(sum(all, "kv_ops_total", "type=\"put\"")).isGreaterThanOrEqualTo(puts);
        assertThat(sum(all, "kv_ops_total", "type=\"get\"")).isGreaterThanOrEqualTo(500);
        assertThat(sum(all, "kv_ops_total", "type=\"delete\"")).isGreaterThanOrEqualTo(50);
        assertThat(sum(all, "kv_ops_total", "type=\"cas\"")).isGreaterThanOrEqualTo(50);
        assertThat(all).contains("# TYPE kv_ops_total counter").contains("# TYPE kv_request_seconds histogram")
                .doesNotContain("quantile=");
        for (String type : List.of("put", "get", "delete", "cas")) {
            String t = "type=\"" + type + "\"";
            double count = sum(all, "kv_request_seconds_count", t);
            assertThat(count).as(type).isPositive();
            assertThat(sum(all, "kv_request_seconds_bucket", t + ",le=\"+Inf\"")).as(type).isEqualTo(count);
            assertThat(sum(all, "kv_request_seconds_bucket", t + ",le=\"10.0\"")).as(type).isPositive();
            assertThat(sum(all, "kv_request_seconds_sum", t)).as(type).isPositive();
        }
        // every error code is exported from the start (0 until it happens), so rate() sees its first error
        for (var code : io.kvraft.common.proto.KvProto.ErrorCode.values()) {
            if (code != io.kvraft.common.proto.KvProto.ErrorCode.OK && code != io.kvraft.common.proto.KvProto.ErrorCode.UNRECOGNIZED) {
                assertThat(beforeLoad).as(code.name()).containsPattern("(?m)^kv_errors_total\\{code=\"" + code + "\",} 0\\.0$");
            }
        }

        // per region (one leader each, checked above): indexes, timings
        for (int r = 1; r <= REGIONS; r++) {
            String region = "region=\"" + r + "\"";
            assertThat(sum(all, "kv_region_applied_index", region)).as("applied, region %d", r).isPositive();
            assertThat(sum(all, "kv_region_committed_index", region)).isPositive();
            assertThat(sum(all, "kv_region_last_log_index", region)).isPositive();
            assertThat(sum(all, "kv_region_term", region)).isPositive();
            assertThat(sum(all, "kv_region_apply_seconds_count", region)).isPositive();
            assertThat(sum(all, "kv_region_commit_seconds_count", region)).isPositive();
            assertThat(sum(all, "kv_region_commit_seconds_bucket", region + ",le=\"+Inf\"")).isPositive();
        }
        assertThat(all).contains("# TYPE kv_region_commit_seconds histogram");
        assertThat(sum(all, "kv_region_read_index_seconds_count", "")).isPositive();
        for (String name : List.of("kv_region_state", "kv_region_snapshot_index", "kv_region_snapshot_timestamp_seconds",
                "kv_region_log_entries_since_snapshot", "kv_node_requests_in_flight", "kv_node_queued_write_requests",
                "kv_node_queued_reads", "kv_region_queued_write_requests", "kv_region_queued_reads",
                "kv_node_rpc_executor_queued", "kv_node_rpc_executor_active")) {
            assertThat(all).as(name).containsPattern("(?m)^" + name + "[{ ]");
        }
        for (String node : texts) {
            // bolt's executor is found on every node (-1 otherwise; a node's own text, so another's cannot hide it)
            assertThat(node).containsPattern("(?m)^kv_node_rpc_executor_queued [0-9]")
                    .containsPattern("(?m)^kv_node_rpc_executor_active [0-9]");
            // raft.appendEntriesThreads 2: every follower has served AppendEntries on its pool (-1 would mean jraft's)
            assertThat(sum(node, "kv_node_append_entries_threads", "")).isBetween(1.0, 64.0);
            assertThat(node).containsPattern("(?m)^kv_node_append_entries_queued [0-9]");
            assertThat(sum(node, "kv_node_append_entries_received_total", "")).as("every node follows some regions")
                    .isPositive();
        }
        assertThat(all).contains("# TYPE kv_node_write_ops_total counter").contains("# TYPE kv_node_read_ops_total counter");
        assertThat(sum(all, "kv_node_write_ops_total", "")).isGreaterThanOrEqualTo(puts);
        assertThat(sum(all, "kv_node_read_ops_total", "")).isGreaterThanOrEqualTo(500);

        // the standard JVM and process collectors, and what moved on node 1 since before the load
        String node1 = texts.get(0);
        assertThat(sum(node1, "jvm_memory_bytes_used", "area=\"heap\"")).isPositive();
        assertThat(sum(node1, "jvm_threads_current", "")).isPositive();
        assertThat(node1).contains("# TYPE jvm_gc_collection_seconds summary").contains("jvm_gc_collection_seconds_count{gc=");
        assertThat(sum(node1, "kv_ops_total", "type=\"put\"")).isGreaterThan(sum(beforeLoad, "kv_ops_total", "type=\"put\""));
        assertThat(sum(node1, "kv_node_write_ops_total", "")).isGreaterThan(sum(beforeLoad, "kv_node_write_ops_total", ""));
        assertThat(sum(node1, "process_cpu_seconds_total", ""))
                .isGreaterThan(sum(beforeLoad, "process_cpu_seconds_total", "")).isPositive();

        // every metric the shipped Grafana dashboard queries is served
        for (String name : MonitoringFilesTest.metricNames()) {
            assertThat(all).as("dashboard metric %s", name).containsPattern("(?m)^" + name + "[{ ]");
        }

        // idle after the load: every region's leader goes quiet (node heartbeats stand in for its jraft heartbeats)
        await().atMost(60, SECONDS).untilAsserted(() -> {
            double quiet = 0;
            for (int i = 0; i < 3; i++) {
                String node = scrape(i);
                assertThat(sum(node, "kv_node_regions_quiet", "")).as("node %d", i)
                        .isLessThanOrEqualTo(sum(node, "kv_node_regions_led", ""));
                quiet += sum(node, "kv_node_regions_quiet", "");
            }
            assertThat(quiet).isEqualTo(REGIONS);
        });

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
        assertThat(mbeans).extracting(ObjectName::toString).anyMatch(n -> n.contains("kv.node.regions_led"))
                .anyMatch(n -> n.contains("kv.region.1.leader"));

        // kv-client status, from the Regions answers and these endpoints
        // (p99s are over the status interval, so puts and gets run meanwhile)
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code;
        var stop = new java.util.concurrent.atomic.AtomicBoolean();
        try (KvClient client = KvClients.connect(ClientConfig.of(peers))) {
            CompletableFuture<Void> load = CompletableFuture.runAsync(() -> {
                for (int i = 0; !stop.get(); i++) {
                    client.put(key(i % 1000), "x".getBytes(StandardCharsets.UTF_8)).join();
                    client.get(key(i % 1000)).join();
                }
            });
            code = KvCtl.run(new String[]{"--servers", peers.get(0), "status", "--interval-ms", "500"},
                    new PrintWriter(out, true), new PrintWriter(err, true));
            stop.set(true);
            load.get(60, SECONDS);
        }
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

        // last, as it is skipped where promtool is missing (not under CI): the names and types are as
        // Prometheus expects them, promtool has no complaint about a loaded node
        for (String node : texts) {
            assertThat(Promtool.checkMetrics(node)).isEmpty();
        }
    }

    /** Keys spread over the whole key space, so every region gets writes. */
    private static byte[] key(int i) {
        long h = i * 0x9E3779B97F4A7C15L;
        return java.nio.ByteBuffer.allocate(12).putLong(h ^ (h >>> 29)).putInt(i).array();
    }
}
